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

    A view over the history store also records, as its table property `changelake.reads`, the
    store's partitions its SQL names (`changelake_record_view_reads`): the store drops a
    partition a compaction replaced only once no view's property names it.
#}
{% materialization view, adapter='spark' -%}
    {%- set existing = adapter.get_relation(database=database, schema=schema, identifier=model['alias']) -%}
    {%- set target_relation = api.Relation.create(
        identifier=model['alias'], schema=schema, database=database, type='view') -%}
    {%- if existing is none or not existing.is_view or not _changelake_view_alterable() -%}
        {%- do changelake_note_view_written() -%}
        {%- set result = create_or_replace_view() -%}
        {%- do changelake_record_view_reads(target_relation) -%}
        {{ return(result) }}
    {%- endif -%}
    {{ run_hooks(pre_hooks) }}
    {%- if not should_full_refresh() and changelake_view_text_is(existing, sql) -%}
        {%- call noop_statement('main', 'view unchanged') -%}
            /* the view's stored text is this model's SQL */
        {%- endcall %}
    {%- else -%}
        {%- do changelake_note_view_written() -%}
        {#- the partitions the new text names are protected before it is stored -#}
        {%- do changelake_record_view_reads(target_relation, 'changelake.reads_next') -%}
        {%- call statement('main') -%}
            alter view {{ target_relation }} as
            {{ sql }}
        {%- endcall %}
        {%- do changelake_record_view_reads(target_relation) -%}
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
{% macro changelake_view_text_is(relation, sql) %}
    {%- set information = relation.information or '' -%}
    {{ return(('\nView Text: ' ~ sql.strip() ~ '\n') in information) }}
{% endmacro %}

{#
    purpose: record on the view `relation` the history store's partitions its SQL names (noted
    while it compiled, `changelake_view_reads`) as the table property `property`; with the
    default, the text is stored and `changelake.reads_next` is cleared. Before `alter view`,
    the new partitions go to `changelake.reads_next`, so a build killed between the two
    statements leaves both the old and the new partitions named. Nothing for a view that
    names none.
#}
{% macro changelake_record_view_reads(relation, property='changelake.reads') %}
    {%- set reads = changelake_view_reads() -%}
    {%- if reads is none -%}
        {{ return('') }}
    {%- endif -%}
    {%- set properties = [changelake_literal(property) ~ ' = ' ~ changelake_literal(reads | join(' '))] -%}
    {%- if property == 'changelake.reads' -%}
        {%- do properties.append(changelake_literal('changelake.reads_next') ~ " = ''") -%}
    {%- endif -%}
    {%- do run_query('alter view ' ~ relation ~ ' set tblproperties (' ~ properties | join(', ') ~ ')') -%}
{% endmacro %}
