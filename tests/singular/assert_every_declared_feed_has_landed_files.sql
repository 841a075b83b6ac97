{{ config(severity='warn') }}
{#-
    Declared feeds with no file in their folder: the folder is empty, not created yet, or not
    where the configuration points (a wrong meta.path or landing root). Such a feed builds with
    no records, so a typo would otherwise pass unnoticed. Returns one row per such feed with the
    folder it reads, and the warning names them; a feed declared before its first file lands
    shows here until it does.
-#}
with

final as (
    {{ changelake_feeds_without_files() }}
)

select * from final
