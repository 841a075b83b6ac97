{#
    purpose: the body of a feed's decoded model: each new landed record read and decoded by the
    Python workers, once, persisted with its lineage and the run's batch id.

    New means: a landed file (path and size) that no committed batch of this model has tried.
    The new files are listed (names and sizes, no contents) when the model compiles, and the
    run reads exactly those: a file landed late (whatever its timestamps) is new; a file landed
    again under the same name and size is not; a file that grew is read again (its records are
    deduplicated downstream); a file landing while the run reads waits for the next run.

    Every file tried gets one marker row (landed_line null, no error) beside its lines. A file
    that could not be read (a .json.gz cut short by a writer that died, or still being written,
    or a file removed since it was listed) has a marker and no lines: the commit (a post-hook) first adds its quarantine row to the
    same batch (and segment); it is tried again when its size changes. A line that is not valid
    UTF-8 is quarantined, its bad bytes shown as U+FFFD.
#}
{% macro changelake_decoded(feed) %}
    {%- if not execute -%}
        {#- parse time: the graph is not built yet; only declare the dependency -#}
        {{ return('select * from ' ~ source('landing', feed)) }}
    {%- endif -%}
    {%- set node = changelake_landing_source(feed) -%}
    {%- set meta = changelake_feed_meta(node) -%}
    {%- set files = changelake_new_files(node) -%}
    {%- if not files and is_incremental() -%}
        {#- nothing new: a query that Spark analyses at once (the temporary view dbt makes of
            it), nothing inserted, nothing committed -#}
        {{ return(changelake_note_nothing_new() ~ 'select * from ' ~ this ~ ' where false') }}
    {%- endif -%}
    {%- if var('changelake_decode_reader', 'files') == 'lines' -%}
        {{ return(adapter.dispatch('changelake_decoded', 'changelake')(feed, meta, files)) }}
    {%- endif -%}
    {{ return(changelake_decoded_from_files(feed, meta, files)) }}
{% endmacro %}

{#
    purpose: the decoded model's body read by the Python worker: the data source
    changelake_landed (python_udfs/landed.py) opens the new files, splits their lines, reads
    each Kafka record and decodes it; a temporary view of it, named for the feed, holds the
    run's file list. The lineage, layout and quarantine columns come back decoded. A task
    reads at most spark.sql.files.maxPartitionBytes of a plain file, as Spark's splits do.
#}
{% macro changelake_decoded_from_files(feed, meta, files) %}
    {%- if not files %}
{{ changelake_note_nothing_new() }}
    {%- endif %}
    {%- set view = changelake_quoted('changelake_landed__' ~ feed) -%}
    {%- set listed = [] -%}
    {%- for file in files -%}
        {%- do listed.append('[' ~ tojson(file[0] | string) ~ ',' ~ file[1] | int ~ ',' ~ file[2] | int ~ ']') -%}
    {%- endfor -%}
    {%- do run_query('create or replace temporary view ' ~ view ~ ' using changelake_landed options ('
        ~ 'files ' ~ changelake_literal('[' ~ listed | join(',') ~ ']') ~ ', '
        ~ 'format ' ~ changelake_literal(meta.envelope_format) ~ ', '
        ~ 'shape ' ~ changelake_literal(meta.shape) ~ ', '
        ~ 'split_bytes ' ~ changelake_literal(changelake_conf_bytes('spark.sql.files.maxPartitionBytes')) ~ ')') -%}
select
    -- ids
    {{ changelake_literal(feed) }} as feed,
    '{{ invocation_id }}' as batch_id,
    -- lineage, the decoded change (the common layout), the quarantine, the Kafka and landing times
    landed.*,
    current_timestamp() as decoded_at,
    -- the table's partition (macros/ledger/segments.sql)
    {{ changelake_segment_column() }}
from {{ view }} as landed
{% endmacro %}

{% macro default__changelake_decoded(feed, meta, files) %}
    {%- if not files %}
{{ changelake_note_nothing_new() }}
    {%- endif %}
    {#- every file is read line by line; a compressed one only if it is whole (see file_lines) -#}
    {%- set gzip_listed = [] -%}
    {%- set plain_listed = [] -%}
    {%- for file in files -%}
        {%- do (gzip_listed if file[0].endswith('.gz') else plain_listed).append(file) -%}
    {%- endfor -%}
    {%- set landing_node = changelake_landing_source(feed) -%}
    {%- set lines_table = changelake_landed_lines(landing_node) -%}
    {%- set single_block_bytes = changelake_single_block_bytes() -%}
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
        {{ changelake_sink_columns(meta, 'landed_file') }}
    from values
        {%- for file in files %}
        ({{ changelake_literal(file[0]) }}, {{ file[1] }}L, {{ file[2] }}L){{ "," if not loop.last }}
        {%- endfor %}
        as listed (landed_file, landed_file_size, landed_at_micros)
    {%- else %}
    select
        cast(null as string) as landed_file,
        cast(null as bigint) as landed_file_size,
        cast(null as timestamp) as landed_at,
        {{ changelake_sink_columns(meta, 'cast(null as string)') }}
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
    where {{ changelake_landed_files_filter(plain_listed + gzip_listed) }}
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
        where {{ changelake_landed_files_filter(plain_listed + gzip_listed) }}
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
            where {{ changelake_landed_files_filter(plain_listed + gzip_listed) }}
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
    from {{ changelake_file_listing(landing_node) }}
    where
        {{ changelake_landed_files_filter(gzip_listed) }}
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
                    {{ changelake_literal(meta.envelope_format) }}, kafka_key, kafka_value, kafka_headers
                )
        end as changes
    from kafka_fields
),

final as (
    select
        -- ids
        {{ changelake_literal(feed) }} as feed,
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
        -- the table's partition (macros/ledger/segments.sql)
        {{ changelake_segment_column() }}
    from decoded
    lateral view outer explode(decoded.changes) as change
)

select * from final
{% endmacro %}
