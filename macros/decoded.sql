{#
    purpose: the body of a feed's decoded model: each new landed record through the decode UDF,
    once, persisted with its lineage and the run's batch id.

    New means: a landed file (path and size) that no committed batch of this model has read.
    Files are pruned by their metadata before any is opened, so a run reads only new files; a
    file landed late (whatever its timestamps) is new; a file landed again under the same name
    and size is not; a file that grew is read again (its records are deduplicated downstream).
#}
{% macro changelake_decoded(feed) %}
    {#- the raw table's file listing is cached per session: see files landed since -#}
    {{ config(pre_hook=["refresh table {{ source('landing', '" ~ feed ~ "') }}"]) }}
    {%- if not execute -%}
        {#- parse time: the graph is not built yet; only declare the dependency -#}
        {{ return('select * from ' ~ source('landing', feed)) }}
    {%- endif -%}
    {%- set meta = _changelake_feed_meta(_changelake_landing_source(feed)) -%}
    {{ return(adapter.dispatch('changelake_decoded', 'changelake')(feed, meta)) }}
{% endmacro %}

{# purpose: "path#size" of every file a committed batch of this model has read #}
{% macro _changelake_processed_files() %}
    {%- if not execute -%}
        {{ return([]) }}
    {%- endif -%}
    {%- set query -%}
        select distinct concat(decoded.landed_file, '#', decoded.landed_file_size) as file_id
        from {{ this }} as decoded
        where {{ changelake_committed('decoded', this.identifier) }}
    {%- endset -%}
    {{ return(run_query(query).columns[0].values()) }}
{% endmacro %}

{% macro default__changelake_decoded(feed, meta) %}
    {%- set processed = _changelake_processed_files() if is_incremental() else [] -%}
    {#- <topic>+<partition>+<startOffset>.json[.gz]: the Kafka Connect sink file name -#}
    {%- set sink_name = "([^/]+)[+]([0-9]+)[+]([0-9]+)[.]json([.]gz)?$" -%}
with

landed_files as (
    select
        value as file_text,
        _metadata.file_path as landed_file,
        _metadata.file_size as landed_file_size,
        _metadata.file_modification_time as landed_at,
        {%- if meta.shape == 'kcat' %}
        false as is_sink_file,
        {%- elif meta.shape == 'connect' %}
        true as is_sink_file,
        {%- else %}
        _metadata.file_path rlike '{{ sink_name }}' as is_sink_file,
        {%- endif %}
        -- Kafka Connect sink file: topic, partition and start offset from the name, once a file
        regexp_extract(_metadata.file_path, '{{ sink_name }}', 1) as sink_topic,
        cast(nullif(regexp_extract(_metadata.file_path, '{{ sink_name }}', 2), '') as int) as sink_partition,
        cast(nullif(regexp_extract(_metadata.file_path, '{{ sink_name }}', 3), '') as bigint) as sink_start_offset
    from {{ source('landing', feed) }}
    {%- if processed %}
    where concat(_metadata.file_path, '#', _metadata.file_size) not in (
        {%- for file_id in processed %}
        {{ _changelake_literal(file_id) }}{{ "," if not loop.last }}
        {%- endfor %}
    )
    {%- endif %}
),

landed_lines as (
    select
        landed_files.landed_file,
        landed_files.landed_file_size,
        landed_files.landed_at,
        lines.line_index as landed_line,
        landed_files.is_sink_file,
        landed_files.sink_topic,
        landed_files.sink_partition,
        landed_files.sink_start_offset,
        -- Windows line ends
        rtrim('\r', lines.line) as raw_record
    from landed_files
    lateral view posexplode(split(landed_files.file_text, '\n')) lines as line_index, line
    where rtrim('\r', lines.line) != ''
),

kafka_records as (
    select
        landed_file,
        landed_file_size,
        landed_at,
        landed_line,
        raw_record,
        is_sink_file,
        -- kcat -C -J: one Kafka record as JSON a line
        case
            when not is_sink_file
                then from_json(
                    raw_record,
                    'topic string, partition int, offset bigint, ts bigint, headers array<string>, '
                    || 'key string, payload string, _corrupt_record string',
                    map('columnNameOfCorruptRecord', '_corrupt_record')
                )
        end as kcat,
        -- Kafka Connect sink file: the value a line
        sink_topic,
        sink_partition,
        sink_start_offset
    from landed_lines
),

checked as (
    select
        *,
        case
            when is_sink_file and sink_start_offset is null
                then 'connect sink file name is not <topic>+<partition>+<startOffset>.json[.gz]'
            when not is_sink_file and (kcat is null or kcat._corrupt_record is not null)
                then 'malformed kcat JSON line'
            when not is_sink_file and (kcat.topic is null or kcat.offset is null)
                then 'kcat record without topic or offset'
        end as landing_error
    from kafka_records
),

kafka_fields as (
    select
        landed_file,
        landed_file_size,
        landed_at,
        landed_line,
        raw_record,
        landing_error,
        case when is_sink_file then sink_topic else kcat.topic end as topic,
        case when is_sink_file then sink_partition else kcat.partition end as kafka_partition,
        case when is_sink_file then sink_start_offset + landed_line else kcat.offset end as kafka_offset,
        case when not is_sink_file then timestamp_millis(kcat.ts) end as kafka_timestamp,
        case when not is_sink_file then kcat.key end as kafka_key,
        case when is_sink_file then raw_record else kcat.payload end as kafka_value,
        case when not is_sink_file then kcat.headers end as kafka_headers
    from checked
),

decoded as (
    select
        *,
        case
            when landing_error is null
                then changelake_decode(
                    {{ _changelake_literal(meta.envelope_format) }}, kafka_key, kafka_value, kafka_headers
                )
        end as changes
    from kafka_fields
),

final as (
    select
        -- ids
        {{ _changelake_literal(feed) }} as feed,
        '{{ invocation_id }}' as batch_id,
        decoded.topic,
        decoded.kafka_partition,
        decoded.kafka_offset,
        decoded.landed_file,
        decoded.landed_line,
        decoded.landed_file_size,
        -- the decoded change (the common layout)
        change.*,
        -- quarantine
        coalesce(decoded.landing_error, change.decode_error) as error_reason,
        case
            when decoded.landing_error is not null or change.decode_error is not null
                then decoded.raw_record
        end as failed_raw_record,
        -- timestamps
        decoded.kafka_timestamp,
        decoded.landed_at,
        current_timestamp() as decoded_at
    from decoded
    lateral view outer explode(decoded.changes) as change
)

select * from final
{% endmacro %}
