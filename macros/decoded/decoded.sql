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
