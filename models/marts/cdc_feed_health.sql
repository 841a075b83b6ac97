with

int_records_unioned as (
    select * from {{ ref('int_records_unioned') }}
),

int_changes_unioned as (
    select * from {{ ref('cdc_change_log') }}
),

records as (
    select
        feed,
        count(distinct landed_file, landed_line) as records_landed,
        count_if(kind = 'row' and error_reason is null) as row_changes,
        count_if(kind = 'truncate' and error_reason is null) as truncates,
        count_if(kind = 'ddl' and error_reason is null) as schema_changes,
        count_if(kind = 'heartbeat' and error_reason is null) as heartbeats,
        count_if(kind = 'tombstone' and error_reason is null) as tombstones,
        count_if(kind = 'transaction' and error_reason is null) as transaction_markers,
        count_if(kind = 'message' and error_reason is null) as messages,
        count(distinct case when error_reason is not null then concat(landed_file, '#', landed_line) end)
            as records_quarantined,
        -- a file that could not be read is one quarantined row without a line
        count(distinct case when landed_line is null then landed_file end)
            as files_unreadable,
        max(case when kind = 'heartbeat' then coalesce(committed_at, captured_at) end) as last_heartbeat_at,
        max(committed_at) as last_committed_at,
        max(landed_at) as last_landed_at,
        max_by(position, committed_at) as last_position
    from int_records_unioned
    group by feed
),

-- every declared feed, its folder, whether that exists, and the files in it now
folders as (
    {{ changelake_feed_folders() }}
),

feeds as (
    select feed from folders
    union
    select feed from records
),

logged as (
    select
        feed,
        count(*) as changes_logged
    from int_changes_unioned
    group by feed
),

final as (
    select
        -- ids
        feeds.feed,
        -- strings
        folders.landing_folder,
        records.last_position,
        -- booleans
        folders.has_landing_folder,
        -- timestamps
        records.last_heartbeat_at,
        records.last_committed_at,
        records.last_landed_at,
        -- numerics
        coalesce(records.records_landed, 0) as records_landed,
        coalesce(records.row_changes, 0) as row_changes,
        coalesce(records.truncates, 0) as truncates,
        coalesce(records.schema_changes, 0) as schema_changes,
        coalesce(records.heartbeats, 0) as heartbeats,
        coalesce(records.tombstones, 0) as tombstones,
        coalesce(records.transaction_markers, 0) as transaction_markers,
        coalesce(records.messages, 0) as messages,
        coalesce(records.records_quarantined, 0) as records_quarantined,
        coalesce(records.files_unreadable, 0) as files_unreadable,
        coalesce(folders.files_listed, 0) as files_listed,
        coalesce(logged.changes_logged, 0) as changes_logged,
        -- how far behind the source the feed is, by its newest commit or heartbeat
        timestampdiff(
            second, greatest(records.last_committed_at, records.last_heartbeat_at), current_timestamp()
        ) as lag_seconds
    from feeds
    left join records on feeds.feed = records.feed
    left join logged on feeds.feed = logged.feed
    left join folders on feeds.feed = folders.feed
)

select * from final
