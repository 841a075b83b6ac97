with

cdc_history as (
    select * from {{ ref('cdc_history') }}
),

final as (
    select
        -- ids
        feed,
        source_name,
        database_name,
        schema_name,
        table_name,
        key_json,
        opening_change_id,
        -- strings
        row_json,
        valid_from_position,
        -- timestamps
        valid_from,
        -- the key and the row as JSON objects
        key,
        row
    from cdc_history
    where is_current
)

select * from final
