{#
    The incremental materialization on Spark, with one change: a model whose compiled SQL found
    nothing new (`changelake_batch_is_empty`: no new landed file, no pending batch) into a
    table that exists runs its hooks and nothing else. dbt-spark would make a temporary view
    of the empty query, describe it and the table (the `on_schema_change` check) and insert
    nothing: four statements on every idle run of each of the eleven incremental models, most
    of what a run with nothing new costs in its model nodes.

    The hooks still run: a post-hook that finishes work a killed run left (the history's
    compaction) does it here too, and the commit hooks skip an empty batch themselves. A schema
    change of the model's query is then checked by its next run with something new. Everything
    else (a first build, a full refresh) is dbt-spark's materialization, unchanged, but for a
    model with new input into a table that exists, appended with its schema checked
    (`changelake_append_batch`). Either way the model is noted as writing
    (`changelake_note_written`), so that what the run's start read of its ledger is read again
    by the models and tests after it.
#}
{% materialization incremental, adapter='spark', supported_languages=['sql', 'python'] -%}
    {%- set existing = load_relation(this) -%}
    {%- if model['language'] != 'sql' or existing is none or existing.is_view or should_full_refresh() -%}
        {%- do changelake_note_written() -%}
        {%- if existing is none or should_full_refresh() -%}
            {%- do changelake_note_rebuilt() -%}
        {%- endif -%}
        {{ return(dbt.materialization_incremental_spark()) }}
    {%- endif -%}
    {%- if not changelake_batch_is_empty() -%}
        {%- do changelake_note_written() -%}
        {%- if (config.get('incremental_strategy') or 'append') == 'append'
            and config.get('on_schema_change') in ('fail', 'ignore', none) -%}
            {{ return(changelake_append_batch(existing)) }}
        {%- endif -%}
        {{ return(dbt.materialization_incremental_spark()) }}
    {%- endif -%}
    {{ run_hooks(pre_hooks) }}
    {%- call noop_statement('main', 'nothing new') -%}
        /* the model found nothing new: nothing to insert */
    {%- endcall %}
    {{ run_hooks(post_hooks) }}
    {{ return({'relations': [this]}) }}
{%- endmaterialization %}

{#
    purpose: the model's new rows appended to its table as dbt-spark's append does (the query
    as a temporary view, then `insert into` from it), without the second of dbt's own work
    around it (three describes and its column diff): the view and the table described once
    each, `insert into ... by name`. The schema check is dbt's `on_schema_change: fail` (the
    default `ignore` skips it and lets Spark's insert by name refuse a column the table lacks):
    the same column names and types on both sides, or an error naming what differs, before
    anything is written. The insert reads the temporary view, as dbt-spark's does: the same
    query put in a subquery of the insert is planned differently, and slower (docs/decisions.md).
#}
{% macro changelake_append_batch(existing) %}
    {{ run_hooks(pre_hooks) }}
    {%- set batch = this.incorporate(path={'identifier': this.identifier ~ '__dbt_tmp'}).include(database=false, schema=false) -%}
    {%- call statement('create_tmp_relation') -%}
        {{ create_table_as(true, batch, compiled_code) }}
    {%- endcall -%}
    {%- if config.get('on_schema_change') == 'fail' -%}
        {%- set query_columns = _changelake_described_columns('describe ' ~ batch) -%}
        {%- set table_columns = _changelake_described_columns('describe table ' ~ existing) -%}
        {%- if query_columns != table_columns -%}
            {%- set differences = [] -%}
            {%- for name in ((query_columns.keys() | list) + (table_columns.keys() | list)) | unique
                if query_columns.get(name) != table_columns.get(name) -%}
                {%- do differences.append(name ~ ': ' ~ (table_columns.get(name) or 'not') ~ ' in the table, '
                    ~ (query_columns.get(name) or 'not') ~ ' in the query') -%}
            {%- endfor -%}
            {%- do exceptions.raise_compiler_error(
                'The source and target schemas on this incremental model are out of sync (on_schema_change: fail): '
                ~ differences | join('; ') ~ '. Run it with --full-refresh to rebuild the table with the new schema.') -%}
        {%- endif -%}
    {%- endif -%}
    {%- call statement('main') -%}
        insert into {{ existing }} by name select * from {{ batch }}
    {%- endcall -%}
    {%- do apply_grants(existing, config.get('grants'), should_revoke(existing, false)) -%}
    {%- do persist_docs(existing, model) -%}
    {{ run_hooks(post_hooks) }}
    {{ return({'relations': [this]}) }}
{% endmacro %}

{#
    purpose: {column name: type} of a `describe` statement's rows: the columns, up to the
    partition section (`# Partition Information`), which repeats the partition columns
#}
{% macro _changelake_described_columns(describe) %}
    {%- set columns = {} -%}
    {%- set section = namespace(columns=true) -%}
    {%- for row in run_query(describe).rows -%}
        {%- if not row[0] or row[0].startswith('#') -%}
            {%- set section.columns = false -%}
        {%- elif section.columns -%}
            {%- do columns.update({row[0] | lower: row[1] | lower}) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(columns) }}
{% endmacro %}
