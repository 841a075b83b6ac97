{# purpose: the body of a feed's decoded model: new raw records through the decode UDF, once #}
{% macro changelake_decoded(feed) %}
    {%- if not execute -%}
        {#- parse time: the graph is not built yet; only declare the dependency -#}
        {{ return('select * from ' ~ source('landing', feed)) }}
    {%- endif -%}
    {%- set node = _changelake_landing_source(feed) -%}
    {%- set envelope_format = node.meta.envelope_format -%}
    {{ return(adapter.dispatch('changelake_decoded', 'changelake')(feed, envelope_format)) }}
{% endmacro %}

{# purpose: find the `landing` source node of a feed, failing at compile time if absent #}
{% macro _changelake_landing_source(feed) %}
    {%- for node in graph.sources.values() -%}
        {%- if node.source_name == 'landing' and node.name == feed -%}
            {{ return(node) }}
        {%- endif -%}
    {%- endfor -%}
    {{ exceptions.raise_compiler_error("no feed '" ~ feed ~ "' in the landing source") }}
{% endmacro %}

{% macro default__changelake_decoded(feed, envelope_format) %}
with

raw_records as (
    select
        value as raw_record,
        _metadata.file_path as landed_file,
        _metadata.file_modification_time as landed_at
    from {{ source('landing', feed) }}
    {% if is_incremental() %}
        -- only files this model has not read yet
        where _metadata.file_path not in (select distinct t.landed_file from {{ this }} as t)
    {% endif %}
),

kafka_records as (
    select
        raw_record,
        landed_file,
        landed_at,
        from_json(
            raw_record,
            'topic string, partition int, offset bigint, ts bigint, headers array<string>, '
            || 'key string, payload string, _corrupt_record string',
            map('columnNameOfCorruptRecord', '_corrupt_record')
        ) as kafka
    from raw_records
),

checked as (
    select
        *,
        case
            when kafka is null or kafka._corrupt_record is not null then 'malformed kcat JSON line'
            when kafka.topic is null or kafka.offset is null then 'kcat record without topic or offset'
        end as landing_error
    from kafka_records
),

decoded as (
    select
        *,
        case
            when landing_error is null
                then changelake_decode('{{ envelope_format }}', kafka.key, kafka.payload, kafka.headers)
        end as changes
    from checked
),

final as (
    select
        '{{ feed }}' as feed,
        decoded.kafka.topic as topic,
        decoded.kafka.partition as kafka_partition,
        decoded.kafka.offset as kafka_offset,
        timestamp_millis(decoded.kafka.ts) as kafka_timestamp,
        decoded.landed_file,
        decoded.landed_at,
        current_timestamp() as decoded_at,
        change.*,
        coalesce(decoded.landing_error, change.decode_error) as error_reason,
        case
            when decoded.landing_error is not null or change.decode_error is not null
                then decoded.raw_record
        end as failed_raw_record
    from decoded
    lateral view outer explode(decoded.changes) as change
)

select * from final
{% endmacro %}
