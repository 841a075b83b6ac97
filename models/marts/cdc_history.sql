with

int_history_versions as (
    select
        versions.*,
        ledger.committed_at as batch_committed_at
    from {{ ref('int_history_versions') }} as versions
    inner join {{ changelake_ledger('int_history_versions') }} as ledger
        on versions.batch_id = ledger.batch_id and ledger.kind = 'batch'
),

latest as (
    select
        *,
        -- a key's versions are those of the latest batch that recomputed it
        max(batch_committed_at) over (
            partition by feed, source_name, database_name, schema_name, table_name, key_json
        ) as latest_batch_committed_at
    from int_history_versions
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
    from latest
    where batch_committed_at = latest_batch_committed_at
)

select * from final
