{#
    purpose: the landed files of the feed of `node` that no committed batch of this model has
    tried, as [path, size, modification time in epoch microseconds], by path; listed before
    the raw table is refreshed, so its reads see every one. One query returns the listing
    and, of the listed files, those a committed batch tried (their marker rows); the listing,
    a row per file, is broadcast to the scan of the markers, so no row is shuffled or sorted,
    and the difference is taken here.
#}
{% macro changelake_new_files(node) %}
    {%- set listing = changelake_file_listing(node) -%}
    {%- do run_query('refresh table ' ~ listing) -%}
    {%- set query -%}
        with

        listed as (
            select
                _metadata.file_path as landed_file,
                _metadata.file_size as landed_file_size,
                _metadata.file_modification_time as landed_at
            from {{ listing }}
        )

        select true as is_listed, landed_file, landed_file_size, unix_micros(landed_at) as landed_at_micros
        from listed
        {%- if is_incremental() %}
        union all
        -- every file tried has its marker row (landed_line null): those alone, not each line
        select /*+ broadcast(listed) */
            false as is_listed,
            decoded.landed_file,
            decoded.landed_file_size,
            null as landed_at_micros
        from {{ this }} as decoded
        left semi join listed
            on decoded.landed_file = listed.landed_file and decoded.landed_file_size = listed.landed_file_size
        where {{ changelake_committed_in_run('decoded', this.identifier) }}
            and decoded.landed_line is null
        {%- endif %}
    {%- endset -%}
    {%- set listed = [] -%}
    {%- set tried = {} -%}
    {%- for row in run_query(query).rows -%}
        {%- if row[0] -%}
            {%- do listed.append([row[1], row[2], row[3]]) -%}
        {%- else -%}
            {%- do tried.update({row[1] ~ '#' ~ row[2]: true}) -%}
        {%- endif -%}
    {%- endfor -%}
    {#- how many files the feed's folder lists now, for the warn test of feeds without files
        (changelake_feeds_without_files), which then lists no folder this build listed -#}
    {%- do changelake_note_files_listed(node.name, listed | length) -%}
    {%- set files = [] -%}
    {%- for file in listed | sort if (file[0] ~ '#' ~ file[1]) not in tried -%}
        {%- do files.append(file) -%}
    {%- endfor -%}
    {%- if files -%}
        {#- a table's file listing is cached per session: the raw table (the lines) is
            refreshed after the files were listed, so its reads see every one of them (the
            listing was refreshed before) -#}
        {%- do run_query('refresh table ' ~ changelake_landed_lines(node)) -%}
    {%- endif -%}
    {{ return(files) }}
{% endmacro %}

{# purpose: columns of a landed file from its path: the Kafka Connect sink name's parts #}
{% macro changelake_sink_columns(meta, path_sql) %}
    {#- <topic>+<partition>+<startOffset>[+<endOffset>].json[.gz]: the Kafka Connect sink file
        name (S3 and GCS sinks; the HDFS sink adds the end offset). A topic name has no '+'. -#}
    {%- set sink_name = "([^/+]+)[+]([0-9]+)[+]([0-9]+)([+][0-9]+)?[.]json([.]gz)?$" -%}
        {%- if meta.shape == 'kcat' %}
        false as is_sink_file,
        {%- elif meta.shape == 'connect' %}
        true as is_sink_file,
        {%- else %}
        {{ path_sql }} rlike '{{ sink_name }}' as is_sink_file,
        {%- endif %}
        regexp_extract({{ path_sql }}, '{{ sink_name }}', 1) as sink_topic,
        cast(nullif(regexp_extract({{ path_sql }}, '{{ sink_name }}', 2), '') as int) as sink_partition,
        cast(nullif(regexp_extract({{ path_sql }}, '{{ sink_name }}', 3), '') as bigint) as sink_start_offset
{% endmacro %}

{#
    purpose: a where clause keeping the rows of a landed-file table that come from `files`
    ([path, size, ...]) alone: Spark lists and reads only those files
#}
{% macro changelake_landed_files_filter(files) %}
    {%- if not files -%}
        {{ return('false') }}
    {%- endif -%}
    {%- set listed = [] -%}
    {%- for file in files -%}
        {%- do listed.append(changelake_literal(file[0] ~ '#' ~ file[1])) -%}
    {%- endfor -%}
    {{ return("concat(_metadata.file_path, '#', _metadata.file_size) in (" ~ listed | join(', ') ~ ')') }}
{% endmacro %}

{#
    purpose: the size up to which Spark reads a file in one block (split) whatever else it
    reads: the smaller of `spark.sql.files.maxPartitionBytes` and
    `spark.sql.files.openCostInBytes` (Spark splits at the larger of the latter and the bytes
    per core, capped by the former)
#}
{% macro changelake_single_block_bytes() %}
    {{ return([changelake_conf_bytes('spark.sql.files.maxPartitionBytes'),
        changelake_conf_bytes('spark.sql.files.openCostInBytes')] | min) }}
{% endmacro %}

{# purpose: a Spark setting that is a size (`128MB`, `4m`, `2048`), in bytes #}
{% macro changelake_conf_bytes(conf) %}
    {%- set text = run_query('set ' ~ conf).rows[0][1] | string | lower -%}
    {%- set units = {'k': 1024, 'm': 1024 ** 2, 'g': 1024 ** 3, 't': 1024 ** 4, 'p': 1024 ** 5} -%}
    {%- set match = modules.re.fullmatch('([0-9]+)([kmgtp]?)b?', text) -%}
    {%- if match is none -%}
        {{ exceptions.raise_compiler_error(conf ~ " is '" ~ text ~ "', not a size in bytes") }}
    {%- endif -%}
    {{ return((match.group(1) | int) * units.get(match.group(2), 1)) }}
{% endmacro %}
