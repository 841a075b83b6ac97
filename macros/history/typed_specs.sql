{#
    purpose: the typed history models of the project, from the graph: a list of {name, spec,
    feed, source_table, columns, tracked}, `spec` the model's name and a digest of its tracked
    columns (a change of `tracked` is a new spec, which no stored island start answers for);
    none listed while parsing
#}
{% macro changelake_typed_models() %}
    {%- set models = [] -%}
    {%- if not execute -%}
        {{ return(models) }}
    {%- endif -%}
    {#- a unit test's graph has no nodes: there, no typed model -#}
    {%- for node in (graph.get('nodes') or {}).values() | sort(attribute='name') if node.resource_type == 'model'
        and node.package_name == project_name and 'changelake_typed' in (node.config.meta or {}) -%}
        {%- set typed = node.config.meta['changelake_typed'] -%}
        {%- do models.append({
            'name': node.name,
            'alias': node.alias,
            'spec': node.name ~ '@' ~ local_md5(tojson(typed.tracked))[:12],
            'feed': typed.feed,
            'source_table': typed.source_table,
            'columns': typed.columns,
            'tracked': typed.tracked,
        }) -%}
    {%- endfor -%}
    {{ return(models) }}
{% endmacro %}

{#
    purpose: SQL predicate over history rows: of the source table `source_table` of the feed
    `feed`. The table name is one of the name's dot-separated tails: a literal list the parquet
    reader skips other tables' row groups by (the store sorts each file by table).
#}
{% macro changelake_typed_table(feed, source_table) %}
    {{- return('feed = ' ~ changelake_literal(feed)
        ~ ' and (table_name in ' ~ changelake_dot_tails(source_table) ~ ' or table_name is null)'
        ~ " and concat_ws('.', database_name, schema_name, table_name) = " ~ changelake_literal(source_table)) -}}
{% endmacro %}

{#
    purpose: SQL expression, in the history store's fold (grouped by table and key): the typed
    models of the key's table, each with its tracked columns, as the `changelake_versions` UDF
    takes them (python_udfs.scd2.versions), null for a table with none
#}
{% macro changelake_typed_tracked() %}
    {%- set type = 'array<struct<model: string, columns: array<string>>>' -%}
    {%- set tables = {} -%}
    {%- for model in changelake_typed_models() -%}
        {%- set columns = [] -%}
        {%- for column in model.tracked -%}
            {%- do columns.append(changelake_literal(column)) -%}
        {%- endfor -%}
        {%- set table = tables.setdefault(tojson([model.feed, model.source_table]), {
            'feed': model.feed, 'source_table': model.source_table, 'specs': []}) -%}
        {%- do table['specs'].append("named_struct('model', " ~ changelake_literal(model.spec)
            ~ ", 'columns', cast(array(" ~ columns | join(', ') ~ ') as array<string>))') -%}
    {%- endfor -%}
    {%- if not tables -%}
        {{ return('cast(null as ' ~ type ~ ')') }}
    {%- endif -%}
    {%- set cases = [] -%}
    {%- for table in tables.values() -%}
        {%- do cases.append('when feed = ' ~ changelake_literal(table.feed)
            ~ " and concat_ws('.', database_name, schema_name, table_name) = " ~ changelake_literal(table.source_table)
            ~ ' then array(' ~ table['specs'] | join(', ') ~ ')') -%}
    {%- endfor -%}
    {{ return('cast(case ' ~ cases | join(' ') ~ ' end as ' ~ type ~ ')') }}
{% endmacro %}

{#
    purpose: in a run of the history store (`store`, its live layers `named`), the typed tables
    whose live keys' frontier rows lack the tracked-version start of one of their typed models
    (a typed model, or its `tracked`, newer than those keys' last fold), as a list of {feed,
    source_table}: the run re-folds every key of those tables from all its changes, so their
    starts are stored for the models as they are now.
    Checked by one query over the live frontier only when the store's table property
    `changelake.typed_specs` is not the project's typed models (their specs, sorted): the
    property is set when a check finds every start there, and removed when one finds any
    missing, before the run folds. So while it equals the models, every fold since that check
    ran with these models, and no key lacks a start: no query.
#}
{% macro changelake_typed_stale_tables(store, named) %}
    {%- set models = changelake_typed_models() -%}
    {%- set property = 'changelake.typed_specs' -%}
    {%- if changelake_stored_typed_specs(store) == changelake_typed_specs(models) -%}
        {{ return([]) }}
    {%- endif -%}
    {%- set stale = [] -%}
    {%- if models -%}
        {%- set counts = [] -%}
        {%- for model in models -%}
            {%- do counts.append('count_if(' ~ changelake_typed_table(model.feed, model.source_table)
                ~ ' and ' ~ changelake_typed_start(model) ~ ' is null) as m' ~ loop.index0) -%}
        {%- endfor -%}
        {%- set missing = run_query('select ' ~ counts | join(', ') ~ ' from ('
            ~ changelake_history_frontier(store, store.identifier, named=named) ~ ') as frontier where is_current').rows[0] -%}
        {%- for model in models -%}
            {%- set table = {'feed': model.feed, 'source_table': model.source_table} -%}
            {%- if missing[loop.index0] > 0 and table not in stale -%}
                {%- do stale.append(table) -%}
                {%- do log(model.name ~ ': ' ~ missing[loop.index0] ~ " live keys have no start for this model's"
                    ~ ' tracked columns (the model or its `tracked` is newer than their last change): this run'
                    ~ ' re-folds every key of ' ~ model.source_table ~ ' (feed ' ~ model.feed ~ ') from all its changes', info=true) -%}
            {%- endif -%}
        {%- endfor -%}
    {%- endif -%}
    {%- if stale -%}
        {%- do run_query('alter table ' ~ store ~ ' unset tblproperties if exists (' ~ changelake_literal(property) ~ ')') -%}
    {%- else -%}
        {%- do changelake_note_typed_specs_folded(store) -%}
    {%- endif -%}
    {{ return(stale) }}
{% endmacro %}

{# purpose: the history store's property `changelake.typed_specs` (none when it has none) #}
{% macro changelake_stored_typed_specs(store) %}
    {%- if adapter.get_relation(database=store.database, schema=store.schema, identifier=store.identifier) is none -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set shown = run_query('show tblproperties ' ~ store ~ " ('changelake.typed_specs')").rows -%}
    {#- Spark answers a missing property with a sentence in place of its value -#}
    {{ return(shown[0][-1] if shown else none) }}
{% endmacro %}

{# purpose: the typed models `models` as the store's property `changelake.typed_specs` holds them: their specs, sorted, as JSON #}
{% macro changelake_typed_specs(models) %}
    {{ return(tojson(models | map(attribute='spec') | sort | list)) }}
{% endmacro %}

{#
    purpose: set the history store's property `changelake.typed_specs` to the project's typed
    models: every live key's frontier row holds their starts. Called when a check found none
    missing, and when a full fold (a first build, a full refresh: every key folded with these
    models) is committed, so the first run after it queries for missing starts no more than
    the runs after a check do.
#}
{% macro changelake_note_typed_specs_folded(store) %}
    {%- do run_query('alter table ' ~ store ~ " set tblproperties ('changelake.typed_specs' = "
        ~ changelake_literal(changelake_typed_specs(changelake_typed_models())) ~ ')') -%}
{% endmacro %}

{#- purpose: a frontier row's start of `model`'s tracked version (null: not folded for it) -#}
{% macro changelake_typed_start(model) -%}
    try_element_at(islands, {{ changelake_literal(model.spec) }})
{%- endmacro %}

{#
    purpose: post-hook of the history store, after its commit: a full fold (a first build, a full
    refresh) folded every key with the typed models as they are now, so the store's property
    `changelake.typed_specs` names them (`changelake_note_typed_specs_folded`)
#}
{% macro changelake_note_full_fold_committed() %}
    {%- if execute and not changelake_batch_is_empty() and changelake_is_full_fold() -%}
        {%- do changelake_note_typed_specs_folded(this) -%}
    {%- endif -%}
    {{ return('') }}
{% endmacro %}
