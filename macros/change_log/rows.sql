{#
    purpose: the public change log (cdc_change_log) over the rows of the change log store
    `relation` that `where` keeps (a predicate over the alias `logged_changes`): the model
    passes the committed rows; a data test that checks each row alone reads one build's rows
    by their partition (`spark__get_where_subquery`), the same select over fewer rows
#}
{% macro changelake_change_log_rows(relation, where) %}
with

int_changes_unioned as (
    select * from {{ relation }} as logged_changes
    where {{ where }}
),

final as (
    select
        -- ids
        change_id,
        feed,
        topic,
        kafka_partition,
        kafka_offset,
        row_index,
        -- strings
        envelope_format,
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
        linked_key_json,
        unavailable_columns,
        column_types,
        position,
        transaction_id,
        -- timestamps
        committed_at,
        captured_at,
        kafka_timestamp,
        landed_at,
        -- booleans
        is_snapshot,
        -- the same values as JSON objects (to_json(key) renders them)
        parse_json(key_json) as key,
        parse_json(before_json) as before,
        parse_json(after_json) as after
    from int_changes_unioned
    -- DataWorks update halves waiting for their partner are not changes yet
    where kind in ('row', 'truncate')
)

select * from final
{% endmacro %}
