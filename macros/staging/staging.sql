{#
    purpose: the body of a feed's staging view: every committed decoded record, renamed and
    typed, with the change id, and keys from configuration where the envelope carries none.
    Records that failed to land or decode stay, with their reason and raw text, for the
    quarantine and the accounting. With `batches` (committed batch ids, each still in its own
    segment), the records of those batches alone, found by literals (the change log's read of
    its pending batches: no query of the ledger)
#}
{% macro changelake_staging(feed, batches=none) %}
    {#- the change log names the decoded table without ref(): its reads of pending batches are
        decided at run time, after dbt has taken each model's refs from its parse -#}
    {%- set decoded = ref('decoded_' ~ feed) if batches is none
        else _changelake_model_relation('decoded_' ~ feed) -%}
    {%- if not execute -%}
        {{ return('select * from ' ~ decoded) }}
    {%- endif -%}
    {%- set meta = changelake_feed_meta(changelake_landing_source(feed)) -%}
with

decoded_records as (
    select * from {{ decoded }} as decoded
    where
        {{ changelake_committed('decoded', decoded.identifier) if batches is none
            else changelake_pending_rows(batches, 'decoded') }}
        -- a file's marker row is no record (an unreadable file has its own quarantine row)
        and (decoded.landed_line is not null or decoded.error_reason is not null)
),

keyed as (
    select
        *,
        {{ _changelake_configured_key(meta.key_columns, 'coalesce(after_json, before_json)') }}
            as configured_key_json,
        {{ _changelake_configured_key(meta.key_columns, 'before_json') }} as configured_before_key_json
    from decoded_records
),

typed as (
    select
        -- ids
        feed,
        batch_id,
        segment,
        topic,
        kafka_partition,
        kafka_offset,
        row_index,
        landed_file,
        landed_line,
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
        before_json,
        after_json,
        unavailable_columns,
        column_types,
        position,
        transaction_id,
        ddl,
        message_prefix,
        message_content,
        error_reason,
        failed_raw_record,
        -- timestamps
        committed_at,
        captured_at,
        kafka_timestamp,
        landed_at,
        -- the key the envelope carries, else the configured key columns
        coalesce(key_json, configured_key_json) as key_json,
        coalesce(
            linked_key_json,
            -- configured keys: an update whose before image has another key changed the key
            case
                when op = 'u' and configured_before_key_json != configured_key_json
                    then configured_before_key_json
            end
        ) as linked_key_json,
        -- booleans
        coalesce(is_snapshot, false) as is_snapshot
    from keyed
),

final as (
    select
        *,
        -- the change's source identity: the same change re-sent (connector restart, at new
        -- offsets) or landed twice gets the same id; without a source position, its Kafka place
        {{ changelake_change_identity() }} as change_id
    from typed
)

select * from final
{% endmacro %}

{#
    purpose: SQL building the canonical key JSON of `image_sql` from configured key columns,
    per table ("database.table" or "database.schema.table"); null where none is configured.
#}
{% macro _changelake_configured_key(key_columns, image_sql) %}
    {%- if not key_columns -%}
        {{ return('cast(null as string)') }}
    {%- endif -%}
    case
    {%- for table, columns in key_columns.items() %}
        when {{ _changelake_table_match(table) }}
            then to_json(named_struct(
                {%- for column in columns | sort %}
                {{ changelake_literal(column) }},
                variant_get(try_parse_json({{ image_sql }}), {{ changelake_literal("$['" ~ column ~ "']") }})
                {{- "," if not loop.last }}
                {%- endfor %}
            ))
    {%- endfor %}
    end
{% endmacro %}

{# purpose: SQL predicate matching a "database.table" or "database.schema.table" name #}
{% macro _changelake_table_match(name) %}
    {%- set parts = name.split('.') -%}
    {%- if parts | length == 2 -%}
        database_name = {{ changelake_literal(parts[0]) }} and table_name = {{ changelake_literal(parts[1]) }}
    {%- elif parts | length == 3 -%}
        database_name = {{ changelake_literal(parts[0]) }}
        and schema_name = {{ changelake_literal(parts[1]) }}
        and table_name = {{ changelake_literal(parts[2]) }}
    {%- else -%}
        {{ exceptions.raise_compiler_error(
            "key_columns: '" ~ name ~ "' is not database.table or database.schema.table") }}
    {%- endif -%}
{% endmacro %}

{#
    purpose: SQL of a change's id, a hash of its source identity: feed, source table, kind, op,
    key, position, both images and the DDL text (two changes of one key at one position, as Canal's
    millisecond positions allow, differ in op or image). Where the envelope gives no position,
    the Kafka topic, partition, offset and row index stand in.
#}
{% macro changelake_change_identity() %}
    sha2(concat_ws('|',
        feed, coalesce(source_name, ''), coalesce(database_name, ''), coalesce(schema_name, ''),
        coalesce(table_name, ''), kind, coalesce(op, ''),
        coalesce(key_json, ''),
        coalesce(position, concat_ws(':', 'kafka', topic, kafka_partition, kafka_offset, row_index)),
        coalesce(before_json, ''), coalesce(after_json, ''), coalesce(ddl, '')
    ), 256)
{% endmacro %}

{# purpose: the relation of a model of this project, by name, from the graph (not a ref) #}
{% macro _changelake_model_relation(name) %}
    {%- set node = graph.nodes['model.' ~ project_name ~ '.' ~ name] -%}
    {{ return(api.Relation.create(database=node.database, schema=node.schema, identifier=node.alias)) }}
{% endmacro %}
