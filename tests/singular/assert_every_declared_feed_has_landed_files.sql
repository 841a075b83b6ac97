{{ config(severity='warn') }}
{#-
    Declared feeds with no file in their folder: the folder is empty, not created yet, or not
    where the configuration points (a wrong meta.path or landing root). Such a feed builds with
    no records, so a typo would otherwise pass unnoticed. Returns one row per such feed with the
    folder it reads; a feed declared before its first file lands shows here until it does.
-#}
with

folders as (
    {{ changelake_feed_folders() }}
),

final as (
    select
        feed,
        landing_folder
    from folders
    where files_listed = 0
)

select * from final
