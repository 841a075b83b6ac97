with

decoded_pg_inventory as (
    select * from {{ ref('decoded_pg_inventory') }}
),

final as (
    select
        -- ids
        feed,
        topic,
        kafka_partition,
        kafka_offset,
        row_index,
        -- strings
        source_engine,
        source_name,
        database_name,
        schema_name,
        table_name,
        kind,
        op,
        op_raw,
        key_json,
        before_json,
        after_json,
        position,
        transaction_id,
        -- timestamps
        committed_at,
        captured_at,
        kafka_timestamp,
        -- booleans
        coalesce(is_snapshot, false) as is_snapshot
    from decoded_pg_inventory
    -- changes to rows and tables only; heartbeats, tombstones, transaction markers and
    -- failed records are accounted for in their own models
    where error_reason is null and kind in ('row', 'truncate')
)

select * from final
