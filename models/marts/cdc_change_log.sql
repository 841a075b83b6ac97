with

stg_landing__pg_inventory_changes as (
    select * from {{ ref('stg_landing__pg_inventory_changes') }}
),

final as (
    select
        sha2(
            concat_ws('|', feed, topic, kafka_partition, kafka_offset, row_index), 256
        ) as change_id,
        *
    from stg_landing__pg_inventory_changes
)

select * from final
