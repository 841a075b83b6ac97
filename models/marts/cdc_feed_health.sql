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
        max(case when kind = 'heartbeat' then coalesce(committed_at, captured_at) end) as last_heartbeat_at,
        max(committed_at) as last_committed_at,
        max(landed_at) as last_landed_at,
        max_by(position, committed_at) as last_position
    from int_records_unioned
    group by feed
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
        records.feed,
        -- numerics
        records.records_landed,
        records.row_changes,
        records.truncates,
        records.schema_changes,
        records.heartbeats,
        records.tombstones,
        records.transaction_markers,
        records.messages,
        records.records_quarantined,
        -- strings
        records.last_position,
        -- timestamps
        records.last_heartbeat_at,
        records.last_committed_at,
        records.last_landed_at,
        coalesce(logged.changes_logged, 0) as changes_logged,
        -- how far behind the source the feed is, by its newest commit or heartbeat
        timestampdiff(
            second, greatest(records.last_committed_at, records.last_heartbeat_at), current_timestamp()
        ) as lag_seconds
    from records
    left join logged on records.feed = logged.feed
)

select * from final
