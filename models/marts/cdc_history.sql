with

closed_versions as (
    select * from ({{ changelake_history_closed(ref('int_history_versions'), published=true) }}) as closed_versions
),

open_versions as (
    select * from ({{ changelake_history_frontier(ref('int_history_versions'), published=true) }}) as frontier
    where is_current
),

versions as (
    select * except (last_position, layer_committed_at) from closed_versions
    union all
    select * except (last_position, layer_committed_at, is_base) from open_versions
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
        version_number,
        opening_change_id,
        closing_change_id,
        -- strings
        row_json,
        valid_from_position,
        valid_to_position,
        opened_from_key_json,
        closed_into_key_json,
        -- timestamps
        valid_from,
        valid_to,
        -- booleans
        is_current,
        is_deleted,
        -- the key and the row as JSON objects (to_json renders them)
        parse_json(key_json) as key,
        parse_json(row_json) as row
    from versions
)

select * from final
