{#
    purpose: the body of a feed's decoded model: each new landed record through the decode UDF,
    once, persisted with its lineage and the run's batch id.

    New means: a landed file (path and size) that no committed batch of this model has tried.
    The new files are listed (names and sizes, no contents) when the model compiles, and the
    run reads exactly those: a file landed late (whatever its timestamps) is new; a file landed
    again under the same name and size is not; a file that grew is read again (its records are
    deduplicated downstream); a file landing while the run reads waits for the next run.

    Every file tried gets one marker row (landed_line null, no error) beside its lines. A file
    that could not be read (a .json.gz cut short by a writer that died, or still being written)
    has a marker and no lines: the commit (a post-hook) first adds its quarantine row to the
    same batch (and segment); it is tried again when its size changes. A line that is not valid
    UTF-8 is quarantined, its bad bytes shown as U+FFFD.
#}
{% macro changelake_decoded(feed) %}
    {%- if not execute -%}
        {#- parse time: the graph is not built yet; only declare the dependency -#}
        {{ return('select * from ' ~ source('landing', feed)) }}
    {%- endif -%}
    {%- set node = _changelake_landing_source(feed) -%}
    {%- set meta = _changelake_feed_meta(node) -%}
    {%- set files = _changelake_new_files(node) -%}
    {%- if not files and is_incremental() -%}
        {#- nothing new: a query that Spark analyses at once (the temporary view dbt makes of
            it), nothing inserted, nothing committed -#}
        {{ return(_changelake_nothing_new() ~ ' /* no new landed file */\nselect * from ' ~ this ~ ' where false') }}
    {%- endif -%}
    {{ return(adapter.dispatch('changelake_decoded', 'changelake')(feed, meta, files)) }}
{% endmacro %}

{#
    purpose: the landed files of the feed of `node` that no committed batch of this model has
    tried, as [path, size, modification time in epoch microseconds], by path; listed before
    the raw table is refreshed, so its reads see every one. One query returns the listing
    and, of the listed files, those a committed batch tried (their marker rows); the listing,
    a row per file, is broadcast to the scan of the markers, so no row is shuffled or sorted,
    and the difference is taken here.
#}
{% macro _changelake_new_files(node) %}
    {%- set listing = _changelake_file_listing(node) -%}
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
    {%- do graph.setdefault('changelake_files_listed', {}).update({invocation_id ~ '/' ~ node.name: listed | length}) -%}
    {%- set files = [] -%}
    {%- for file in listed | sort if (file[0] ~ '#' ~ file[1]) not in tried -%}
        {%- do files.append(file) -%}
    {%- endfor -%}
    {%- if files -%}
        {#- a table's file listing is cached per session: the raw table (the lines) is
            refreshed after the files were listed, so its reads see every one of them (the
            listing was refreshed before) -#}
        {%- do run_query('refresh table ' ~ _changelake_landed_lines(node)) -%}
    {%- endif -%}
    {{ return(files) }}
{% endmacro %}

{# purpose: columns of a landed file from its path: the Kafka Connect sink name's parts #}
{% macro _changelake_sink_columns(meta, path_sql) %}
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
{% macro _changelake_landed_files_filter(files) %}
    {%- if not files -%}
        {{ return('false') }}
    {%- endif -%}
    {%- set listed = [] -%}
    {%- for file in files -%}
        {%- do listed.append(_changelake_literal(file[0] ~ '#' ~ file[1])) -%}
    {%- endfor -%}
    {{ return("concat(_metadata.file_path, '#', _metadata.file_size) in (" ~ listed | join(', ') ~ ')') }}
{% endmacro %}

{#
    purpose: the size up to which Spark reads a file in one block (split) whatever else it
    reads: the smaller of `spark.sql.files.maxPartitionBytes` and
    `spark.sql.files.openCostInBytes` (Spark splits at the larger of the latter and the bytes
    per core, capped by the former)
#}
{% macro _changelake_single_block_bytes() %}
    {%- set sizes = [] -%}
    {%- for conf in ('spark.sql.files.maxPartitionBytes', 'spark.sql.files.openCostInBytes') -%}
        {%- set text = run_query('set ' ~ conf).rows[0][1] | string | lower -%}
        {%- set units = {'k': 1024, 'm': 1024 ** 2, 'g': 1024 ** 3, 't': 1024 ** 4, 'p': 1024 ** 5} -%}
        {%- set match = modules.re.fullmatch('([0-9]+)([kmgtp]?)b?', text) -%}
        {%- if match is none -%}
            {{ exceptions.raise_compiler_error(conf ~ " is '" ~ text ~ "', not a size in bytes") }}
        {%- endif -%}
        {%- do sizes.append((match.group(1) | int) * units.get(match.group(2), 1)) -%}
    {%- endfor -%}
    {{ return(sizes | min) }}
{% endmacro %}

{% macro default__changelake_decoded(feed, meta, files) %}
    {%- if not files %}
{{ _changelake_nothing_new() }} /* no new landed file */
    {%- endif %}
    {#- every file is read line by line; a compressed one only if it is whole (see file_lines) -#}
    {%- set gzip_listed = [] -%}
    {%- set plain_listed = [] -%}
    {%- for file in files -%}
        {%- do (gzip_listed if file[0].endswith('.gz') else plain_listed).append(file) -%}
    {%- endfor -%}
    {%- set landing_node = _changelake_landing_source(feed) -%}
    {%- set lines_table = _changelake_landed_lines(landing_node) -%}
    {%- set single_block_bytes = _changelake_single_block_bytes() -%}
    {%- set plain_single_block = namespace(value=true) -%}
    {%- for file in plain_listed if file[1] > single_block_bytes -%}
        {%- set plain_single_block.value = false -%}
    {%- endfor -%}
    {%- set plain_single_block = plain_single_block.value -%}
    {%- set auto_hint = (
        ' (read as kcat lines: the file name is not <topic>+<partition>+<startOffset>[+<endOffset>].json[.gz])'
        if meta.shape == 'auto' else '') -%}
with

-- the files this run tries (listed when the model compiled)
new_files as (
    {%- if files %}
    select
        landed_file,
        landed_file_size,
        timestamp_micros(landed_at_micros) as landed_at,
        -- Kafka Connect sink file: topic, partition and start offset from the name, once a file
        {{ _changelake_sink_columns(meta, 'landed_file') }}
    from values
        {%- for file in files %}
        ({{ _changelake_literal(file[0]) }}, {{ file[1] }}L, {{ file[2] }}L){{ "," if not loop.last }}
        {%- endfor %}
        as listed (landed_file, landed_file_size, landed_at_micros)
    {%- else %}
    select
        cast(null as string) as landed_file,
        cast(null as bigint) as landed_file_size,
        cast(null as timestamp) as landed_at,
        {{ _changelake_sink_columns(meta, 'cast(null as string)') }}
    where false
    {%- endif %}
),

-- the lines of the files, read line by line, so a file of any size streams through in blocks
-- (Spark's splits); a line's number is its index in its block plus the lines of its file's
-- earlier blocks (changelake_line_in_block, python_udfs/spark_udfs.py). A compressed file is
-- never split: one block, inflated as it is read.
file_lines as (
    {%- if plain_single_block %}
    -- every uncompressed file is smaller than the smallest split Spark makes: one block each,
    -- whose first line is the file's first (no count of each block's lines to add up)
    select
        _metadata.file_path as landed_file,
        _metadata.file_size as landed_file_size,
        case
            when _metadata.file_block_start != 0
                then raise_error('line numbers: ' || _metadata.file_path || ' was read in more than one block')
            -- every row of the scan, in order: no filter may come before it
            else cast(changelake_line_in_block(_metadata.file_path, _metadata.file_block_start) as int)
        end as landed_line,
        value as line
    from {{ lines_table }}
    where {{ _changelake_landed_files_filter(plain_listed + gzip_listed) }}
    {%- else %}
    -- the block counts (a row per block) go to every task: the lines stream through, never
    -- shuffled or sorted
    select /*+ broadcast(blocks) */
        read.landed_file,
        read.landed_file_size,
        case
            when blocks.block_start is null
                then raise_error('line numbers: a block of ' || read.landed_file || ' was not counted')
            else cast(blocks.lines_before + read.line_in_block as int)
        end as landed_line,
        read.line
    from (
        select
            _metadata.file_path as landed_file,
            _metadata.file_size as landed_file_size,
            _metadata.file_block_start as block_start,
            -- every row of the scan, in order: no filter may come before it
            changelake_line_in_block(_metadata.file_path, _metadata.file_block_start) as line_in_block,
            value as line
        from {{ lines_table }}
        where {{ _changelake_landed_files_filter(plain_listed + gzip_listed) }}
    ) as read
    left join (
        select
            landed_file,
            landed_file_size,
            block_start,
            coalesce(
                sum(block_lines) over (
                    partition by landed_file, landed_file_size
                    order by block_start
                    rows between unbounded preceding and 1 preceding
                ),
                0
            ) as lines_before
        from (
            select
                _metadata.file_path as landed_file,
                _metadata.file_size as landed_file_size,
                _metadata.file_block_start as block_start,
                count(*) as block_lines
            from {{ lines_table }}
            where {{ _changelake_landed_files_filter(plain_listed + gzip_listed) }}
            group by _metadata.file_path, _metadata.file_size, _metadata.file_block_start
        ) as counted
    ) as blocks
        on
            read.landed_file = blocks.landed_file
            and read.landed_file_size = blocks.landed_file_size
            and read.block_start = blocks.block_start
    {%- endif %}
),

-- the compressed (.gz) files that are whole gzip: the text reader reads a stream cut short (a
-- writer that died) up to the cut and drops the rest without a word, so such a file is never
-- read in part. Whether a file is whole is found by inflating its bytes in steps and counting
-- its lines (changelake_gzip_lines, python_udfs/spark_udfs.py): the text in memory is a step's
-- whatever the file inflates to; the compressed bytes are held whole (a binaryFile row).
whole_gzip_files as (
    select
        _metadata.file_path as landed_file,
        _metadata.file_size as landed_file_size
    from {{ _changelake_file_listing(landing_node) }}
    where
        {{ _changelake_landed_files_filter(gzip_listed) }}
        and changelake_gzip_lines(content) is not null
),

landed_lines as (
    select
        new_files.landed_file,
        new_files.landed_file_size,
        new_files.landed_at,
        read.landed_line,
        new_files.is_sink_file,
        new_files.sink_topic,
        new_files.sink_partition,
        new_files.sink_start_offset,
        -- Windows line ends
        rtrim('\r', read.line) as raw_record,
        case
            when read.is_bad_utf8
                then 'line is not valid UTF-8 (the raw record shows each invalid byte as U+FFFD)'
        end as line_error
    from (
        select /*+ broadcast(whole_gzip_files) */
            file_lines.landed_file,
            file_lines.landed_file_size,
            file_lines.landed_line,
            -- a line keeps its bytes; an invalid one is shown with U+FFFD
            make_valid_utf8(file_lines.line) as line,
            not is_valid_utf8(file_lines.line) as is_bad_utf8
        from file_lines
        left join whole_gzip_files
            on
                file_lines.landed_file = whole_gzip_files.landed_file
                and file_lines.landed_file_size = whole_gzip_files.landed_file_size
        where not endswith(file_lines.landed_file, '.gz') or whole_gzip_files.landed_file is not null
    ) as read
    inner join new_files
        on read.landed_file = new_files.landed_file and read.landed_file_size = new_files.landed_file_size
    where rtrim('\r', read.line) != ''

    union all

    -- one marker a file tried, readable or not
    select
        landed_file,
        landed_file_size,
        landed_at,
        cast(null as int) as landed_line,
        is_sink_file,
        sink_topic,
        sink_partition,
        sink_start_offset,
        cast(null as string) as raw_record,
        cast(null as string) as line_error
    from new_files
),

kafka_records as (
    select
        landed_file,
        landed_file_size,
        landed_at,
        landed_line,
        raw_record,
        is_sink_file,
        line_error,
        -- kcat -C -J: one Kafka record as JSON a line
        case
            when not is_sink_file and line_error is null
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
            -- a file's marker is no record
            when landed_line is null
                then null
            when line_error is not null
                then line_error
            when is_sink_file and sink_start_offset is null
                then 'connect sink file name is not <topic>+<partition>+<startOffset>[+<endOffset>].json[.gz]'
            when not is_sink_file and (kcat is null or kcat._corrupt_record is not null)
                then 'malformed kcat JSON line{{ auto_hint }}'
            when not is_sink_file and (kcat.topic is null or kcat.offset is null)
                then 'kcat record without topic or offset{{ auto_hint }}'
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
            when landing_error is null and landed_line is not null
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
        current_timestamp() as decoded_at,
        -- the table's partition (macros/segments.sql)
        {{ changelake_segment_column() }}
    from decoded
    lateral view outer explode(decoded.changes) as change
)

select * from final
{% endmacro %}

{#
    purpose: post-hook of a decoded model: commit this run's batch. One query over the batch
    (its own parquet files: the segment and batch filters skip the others) counts its rows and
    the files it tried that gave no line; each of those first gets its quarantine row (the
    marker's copy, with the reason) in the same batch and segment, then the ledger row is
    written with the rows counted (macros/ledger.sql). Nothing is written when the batch holds
    no row.
#}
{% macro changelake_commit_decoded_batch() %}
    {%- if not execute or _changelake_batch_is_empty() -%}
        {{ return('') }}
    {%- endif -%}
    {%- set counted -%}
        select coalesce(sum(file_rows), 0) as batch_rows, count_if(not has_lines) as unreadable_files
        from (
            select count(*) as file_rows, bool_or(landed_line is not null) as has_lines
            from {{ this }}
            where {{ changelake_pending_rows([invocation_id]) }}
            group by landed_file, landed_file_size
        ) as files
    {%- endset -%}
    {%- set row = run_query(counted).rows[0] -%}
    {%- if row[1] > 0 -%}
        {%- do run_query(_changelake_quarantine_unreadable_files()) -%}
    {%- endif -%}
    {%- do changelake_commit_rows(row[0] + row[1]) -%}
    {{ return('') }}
{% endmacro %}

{#
    purpose: SQL adding one quarantine row (the marker's copy, with the reason) for each file
    this batch tried that gave no line
#}
{% macro _changelake_quarantine_unreadable_files() %}
    insert into {{ this }} by name
    select
        markers.* except (error_reason),
        'landed file could not be read, or holds no record: a compressed stream cut short or '
        || 'corrupt (a writer that died, or a file still being written), no permission to read '
        || 'it, or no non-empty line; it is tried again when its size changes' as error_reason
    from {{ this }} as markers
    where
        {{ changelake_pending_rows([invocation_id], 'markers') }}
        and markers.landed_line is null
        and markers.error_reason is null
        and not exists (
            select 1
            from {{ this }} as lines
            where
                {{ changelake_pending_rows([invocation_id], 'lines') }}
                and lines.landed_line is not null
                and lines.landed_file = markers.landed_file
                and lines.landed_file_size = markers.landed_file_size
        )
{% endmacro %}
