{#
    purpose: SQL (a select, the columns of int_records_unioned) of the records that this
    invocation's decoded batches hold: each feed whose decoded model committed a batch in this
    invocation, read through its staging by the batch id, a literal. The read prunes to the
    batch's files and runs no query of the ledger, where reading int_records_unioned runs one
    per feed (its staging views find the live segments with a scalar subquery), however few of
    its rows a build's data tests look at. None when no feed committed a batch in this
    invocation. Ask it only in tests (every model has finished).
#}
{% macro changelake_this_build_records() %}
    {%- set selects = [] -%}
    {%- for node in (changelake_landing_nodes() if execute else []) -%}
        {%- if changelake_stores_now(['decoded_' ~ node.name]).committed -%}
            {%- do selects.append('select * from (' ~ changelake_staging(node.name, [invocation_id])
                ~ ') as decoded_' ~ node.name) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(selects | join('\nunion all\n') if selects else none) }}
{% endmacro %}

{#
    purpose: the rows this invocation's decoded batches committed, all feeds together (the
    records `changelake_this_build_records` reads, with each unreadable file's marker row), as
    their models noted them when they committed: no query. None when a decoded model wrote in
    this invocation without saying what it committed. Ask it only in tests.
#}
{% macro changelake_this_build_record_count() %}
    {%- set models = [] -%}
    {%- for node in (changelake_landing_nodes() if execute else []) -%}
        {%- do models.append('decoded_' ~ node.name) -%}
    {%- endfor -%}
    {%- set committed = changelake_committed_now(models) -%}
    {{ return(none if committed is none else changelake_batches_of_all(committed).values() | sum) }}
{% endmacro %}

{#
    purpose: SQL counting the landed records (lines holding a byte besides a carriage return) of
    every feed of the `landing` source, one row per feed; an empty relation when there are none.
    With `records` (a select of decoded records: this build's, `changelake_this_build_records`),
    only the files those records came from are read: they are listed first and named to the
    counting function as literals. 'false': none, without a query. The Python function
    changelake_landed_records counts a file's lines apart from the reader that decodes it (a
    file streams through; a compressed file that is not whole gzip counts no line, as its
    decoded model reads none), each feed's files in a task of their own.
#}
{% macro changelake_landed_records(records='true') %}
    {%- set files = {} -%}
    {%- if records not in ('true', 'false') and execute -%}
        {%- for row in run_query('select distinct feed, landed_file from (' ~ records ~ ') as records') -%}
            {%- do files.setdefault(row[0], []).append(changelake_literal(row[1])) -%}
        {%- endfor -%}
    {%- endif -%}
    {%- set selects = [] -%}
    {%- for node in changelake_landing_nodes() if records == 'true' or node.name in files -%}
        {%- set only = 'cast(null as array<string>)' if records == 'true'
            else 'array(' ~ files[node.name] | join(', ') ~ ')' -%}
        {%- do selects.append('select ' ~ changelake_literal(node.name) ~ ' as feed, '
            ~ 'coalesce(sum(records_landed), 0) as records_landed from changelake_landed_records('
            ~ changelake_feed_files_args(node) ~ ', ' ~ only ~ ')') -%}
    {%- endfor -%}
    {{ return(changelake_union_all(selects, 'select cast(null as string) as feed, 0 as records_landed')) }}
{% endmacro %}

{#
    purpose: SQL (a select) of the committed records of the feeds whose envelope can split an
    update into two records (DataWorks), read through their staging views, with
    `is_update_half`; no row when no feed is DataWorks. The accounting looks for an update
    half's partner there, not in every feed's records.
#}
{% macro changelake_update_half_records() %}
    {%- set selects = [] -%}
    {%- for node in changelake_landing_nodes()
        if changelake_feed_meta(node).envelope_format.split(';')[0] == 'dataworks' -%}
        {%- set staging = graph.nodes.get('model.' ~ project_name ~ '.stg_landing__' ~ node.name) -%}
        {%- if staging is not none -%}
            {%- do selects.append('select feed, database_name, schema_name, table_name, position, op_raw, '
                ~ 'error_reason, ' ~ changelake_is_update_half() ~ ' as is_update_half from '
                ~ staging.relation_name) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(changelake_union_all(selects,
        'select cast(null as string) as feed, cast(null as string) as database_name, '
        ~ 'cast(null as string) as schema_name, cast(null as string) as table_name, '
        ~ 'cast(null as string) as position, cast(null as string) as op_raw, '
        ~ 'cast(null as string) as error_reason, false as is_update_half')) }}
{% endmacro %}

{# purpose: SQL expression: whether a decoded record is one half of a DataWorks update #}
{% macro changelake_is_update_half() %}
    {{- return("envelope_format = 'dataworks' and op_raw in ('UPDATE_BEFOR', 'UPDATE_BEFORE', 'UPDATE_AFTER') "
        ~ "and (before_json is null or after_json is null)") -}}
{% endmacro %}
