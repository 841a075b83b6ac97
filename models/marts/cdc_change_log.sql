with

stg_landing__pg_inventory_changes as (
    select * from {{ ref('stg_landing__pg_inventory_changes') }}
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
        is_snapshot,
        -- the same Kafka record always gets the same id, however often it lands
        sha2(concat_ws('|', feed, topic, kafka_partition, kafka_offset, row_index), 256) as change_id
    from stg_landing__pg_inventory_changes
)

select * from final
