{#
    The view materialization on Spark, with two changes:

    1. A view whose stored text is already the model's SQL is left as it is. The views here
       (staging, intermediate, marts, typed) read committed batches through the ledgers, so
       their SQL stays the same from run to run; dbt-spark would drop and create each of them
       on every run, which is most of what a run with little new costs in its view nodes.
    2. A view that exists and must change (its SQL was edited, a typed column was added, a full
       refresh) is changed in place with `alter view ... as`: one metastore call that swaps
       its text and columns. dbt-spark's `create or replace view` is a drop and then a create
       in Spark (two metastore calls): between them the view does not exist, so a reader in
       that moment fails, and a build killed there leaves the view missing until the next run.
       Where the view's own DDL carries more than its query (persisted descriptions, an
       enforced contract), `alter view` cannot say it and the view is replaced as dbt-spark
       replaces it. A view built for the first time is created as before.

    The stored text comes from the relation cache dbt fills at the start of a run (`show table
    extended`, whose information lists `View Text`), so the check costs no query.
#}
{% materialization view, adapter='spark' -%}
    {%- set existing = adapter.get_relation(database=database, schema=schema, identifier=model['alias']) -%}
    {%- set target_relation = api.Relation.create(
        identifier=model['alias'], schema=schema, database=database, type='view') -%}
    {%- if existing is none or not existing.is_view or not _changelake_view_alterable() -%}
        {%- do _changelake_note_view_written() -%}
        {{ return(create_or_replace_view()) }}
    {%- endif -%}
    {{ run_hooks(pre_hooks) }}
    {%- if not should_full_refresh() and _changelake_view_text_is(existing, sql) -%}
        {%- call noop_statement('main', 'view unchanged') -%}
            /* the view's stored text is this model's SQL */
        {%- endcall %}
    {%- else -%}
        {%- do _changelake_note_view_written() -%}
        {%- call statement('main') -%}
            alter view {{ target_relation }} as
            {{ sql }}
        {%- endcall %}
        {%- do apply_grants(target_relation, config.get('grants'),
            should_revoke=should_revoke(true, full_refresh_mode=true)) -%}
    {%- endif %}
    {{ run_hooks(post_hooks) }}
    {{ return({'relations': [target_relation]}) }}
{%- endmaterialization %}

{# purpose: whether `alter view ... as` says all of this view's DDL (its query alone) #}
{% macro _changelake_view_alterable() %}
    {%- set contract = config.get('contract') -%}
    {{ return(not (config.persist_relation_docs() or config.persist_column_docs()
        or (contract and contract.enforced))) }}
{% endmacro %}

{# purpose: whether the view `relation` (from the relation cache) stores exactly `sql` as its text #}
{% macro _changelake_view_text_is(relation, sql) %}
    {%- set information = relation.information or '' -%}
    {{ return(('\nView Text: ' ~ sql.strip() ~ '\n') in information) }}
{% endmacro %}

{#
    purpose: remember that this invocation creates or changes a view (in the graph dict dbt
    shares between nodes and hooks): the run's end then looks for partitions that no view
    names any more (changelake_drop_unpublished_layers), and skips that when none changed
#}
{% macro _changelake_note_view_written() %}
    {%- do graph.setdefault('changelake_views_written', []).append(invocation_id) -%}
{% endmacro %}

{# purpose: whether this invocation created or changed a view #}
{% macro changelake_views_written_now() %}
    {{ return(invocation_id in graph.get('changelake_views_written', [])) }}
{% endmacro %}
