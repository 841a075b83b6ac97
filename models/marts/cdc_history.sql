with

versions as (
    -- the live closed versions and the open ones, as the history store holds them
    select * from ({{ changelake_history_versions(ref('int_history_versions')) }}) as versions
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
