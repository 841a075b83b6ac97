with

open_versions as (
    -- the history store's frontier holds each key's last version: read it, not the history
    select * from ({{ changelake_history_frontier(ref('int_history_versions'), published=true) }}) as frontier
    where is_current
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
        parse_json(key_json) as key,
        parse_json(row_json) as row
    from open_versions
)

select * from final
