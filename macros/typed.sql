{#
    purpose: per-table typed SCD-2 history and current state, from one configuration entry.

    A typed history model is one call, which is the table's whole configuration:

        {{ changelake_typed_history(
            feed='pg_inventory',
            source_table='inventory.public.customers',   -- database[.schema].table
            columns={'id': 'int', 'email': 'string', 'created_at': 'timestamp', ...},
            key=['id'],
            tracked=['email', 'is_active']               -- optional; default: every column
        ) }}

    It reads the table's versions from `cdc_history` and gives every configured column its own
    typed column (`cast` from the canonical JSON text; `binary` columns from base64). With
    `tracked`, consecutive versions that differ only in untracked columns are one version (as
    dbt snapshots' `check_cols`): it keeps the values of its first change and closes where the
    last one closed. A delete still closes, and a re-insert still opens a new version.
    The typed current model is `{{ changelake_typed_current('<typed history model>') }}`: the
    history store's fold keeps each key's tracked-version start for it (the call's settings
    reach the fold as the model's `meta`, _changelake_typed_models), so it reads one row a key.
#}
{% macro changelake_typed_history(feed, source_table, columns, key, tracked=none) %}
    {%- set tracked_columns = tracked if tracked is not none else columns.keys() | list -%}
    {%- for column in key + tracked_columns if column not in columns -%}
        {{ exceptions.raise_compiler_error(
            "typed history of " ~ source_table ~ ": column '" ~ column
            ~ "' is a key or tracked column but has no type in `columns`") }}
    {%- endfor %}
    {#- what the history store's fold and the typed current model read (_changelake_typed_models) -#}
    {{- config(meta={'changelake_typed': {
        'feed': feed, 'source_table': source_table, 'columns': columns, 'tracked': tracked_columns | list,
    }}) }}
with

versions as (
    select
        key_json,
        row_json,
        version_number,
        valid_from,
        valid_to,
        valid_from_position,
        valid_to_position,
        is_current,
        is_deleted,
        opening_change_id,
        closing_change_id,
        from_json(
            row_json,
            {{ _changelake_literal('struct<' ~ _changelake_struct_fields(columns) ~ '>') }}
        ) as image
    from {{ ref('cdc_history') }}
    where {{ _changelake_typed_table(feed, source_table) }}
),

islands as (
    select
        *,
        -- a version starts a new tracked version unless it continues the previous one unchanged
        sum(case when continues then 0 else 1 end) over (
            partition by key_json order by valid_from_position, version_number
            rows between unbounded preceding and current row
        ) as island
    from (
        select
            *,
            coalesce(
                -- the previous version was closed by this one's opening (no delete, no gap)
                not lag(is_deleted) over (
                    partition by key_json order by valid_from_position, version_number
                ) and lag(valid_to_position) over (
                    partition by key_json order by valid_from_position, version_number
                ) = valid_from_position and {% for column in tracked_columns -%}
                    image.{{ _changelake_quoted(column) }} <=> lag(image.{{ _changelake_quoted(column) }}) over (
                        partition by key_json order by valid_from_position, version_number
                    ){{ " and " if not loop.last }}
                {%- endfor %},
                false
            ) as continues
        from versions
    )
),

collapsed as (
    select
        key_json,
        min_by(image, valid_from_position) as image,
        min_by(valid_from, valid_from_position) as valid_from,
        max_by(valid_to, valid_from_position) as valid_to,
        min(valid_from_position) as valid_from_position,
        max_by(valid_to_position, valid_from_position) as valid_to_position,
        max_by(is_current, valid_from_position) as is_current,
        max_by(is_deleted, valid_from_position) as is_deleted,
        min_by(opening_change_id, valid_from_position) as opening_change_id,
        max_by(closing_change_id, valid_from_position) as closing_change_id
    from islands
    group by key_json, island
),

final as (
    select
        -- ids
        key_json,
        row_number() over (partition by key_json order by valid_from_position) as version_number,
        opening_change_id,
        closing_change_id,
        -- the configured columns, typed
        {% for column, type in columns.items() -%}
        {{ _changelake_typed_value('image.' ~ _changelake_quoted(column), type) }} as {{ _changelake_quoted(column) }},
        {% endfor -%}
        -- validity
        valid_from_position,
        valid_to_position,
        valid_from,
        valid_to,
        is_current,
        is_deleted
    from collapsed
)

select * from final
{% endmacro %}

{#
    purpose: SQL predicate over history rows: of the source table `source_table` of the feed
    `feed`. The table name is one of the name's dot-separated tails: a literal list the parquet
    reader skips other tables' row groups by (the store sorts each file by table).
#}
{% macro _changelake_typed_table(feed, source_table) %}
    {{- return('feed = ' ~ _changelake_literal(feed)
        ~ ' and (table_name in ' ~ _changelake_dot_tails(source_table) ~ ' or table_name is null)'
        ~ " and concat_ws('.', database_name, schema_name, table_name) = " ~ _changelake_literal(source_table)) -}}
{% endmacro %}

{# purpose: 'a.b.c' -> "('a.b.c', 'b.c', 'c')": a SQL list of what follows each dot, and the whole #}
{% macro _changelake_dot_tails(name) %}
    {%- set parts = name.split('.') -%}
    {%- set tails = [] -%}
    {%- for index in range(parts | length) -%}
        {%- do tails.append(_changelake_literal(parts[index:] | join('.'))) -%}
    {%- endfor -%}
    {{ return('(' ~ tails | join(', ') ~ ')') }}
{% endmacro %}

{# purpose: a SQL string literal for any text (quotes and backslashes escaped) #}
{% macro _changelake_literal(text) %}
    {{- return("'" ~ (text | string).replace('\\', '\\\\').replace("'", "\\'") ~ "'") -}}
{% endmacro %}

{# purpose: a Spark SQL identifier for any name (backticks doubled inside) #}
{% macro _changelake_quoted(name) %}
    {{- return('`' ~ (name | string).replace('`', '``') ~ '`') -}}
{% endmacro %}

{# purpose: "`a`: string, `b`: string" for the columns (the schema of the row image) #}
{% macro _changelake_struct_fields(columns) %}
    {%- set fields = [] -%}
    {%- for column in columns -%}
        {%- do fields.append(_changelake_quoted(column) ~ ': string') -%}
    {%- endfor -%}
    {{- return(fields | join(', ')) -}}
{% endmacro %}

{# purpose: one canonical JSON text value as its configured Spark type #}
{% macro _changelake_typed_value(expression, type) %}
    {%- if modules is defined and not modules.re.fullmatch('[A-Za-z_]+( *[(][0-9]+( *, *[0-9]+)?[)])?', type | string) -%}
        {{ exceptions.raise_compiler_error(
            "typed column type '" ~ type ~ "' is not a Spark type name (int, decimal(10,2), ...)") }}
    {%- endif -%}
    {%- if type in ('binary', 'bytes') -%}
        unbase64({{ expression }})
    {%- elif type in ('string', 'json') -%}
        {{ expression }}
    {%- else -%}
        cast({{ expression }} as {{ type }})
    {%- endif -%}
{% endmacro %}

{#
    purpose: the open versions of a typed history model: one row per live key, as its typed
    history's open versions give them (a tracked version's first change's values, opening and
    start). Read from the history store's frontier, which keeps for each key the start of its
    last version's run of equal tracked values (`islands`, python_udfs/scd2.py): one row a key,
    however many versions the key has had, where the typed history reads every version of the
    table. While a live key's frontier row has no start for this model's tracked columns (the
    model, or its `tracked`, is newer than the key's last change), the model reads its typed
    history instead, and says so. The next run of the history store that has new changes to
    fold re-folds every key of such a table (_changelake_typed_stale_tables), storing the
    starts; so does `changelake dbt build --full-refresh --select int_history_versions+`.
#}
{% macro changelake_typed_current(history) %}
    {%- set store = ref('int_history_versions') -%}
    {%- set model = (_changelake_typed_models() | selectattr('alias', 'equalto', history.identifier) | list or [none])[0] -%}
    {%- if model is none -%}
        {{ return(_changelake_typed_current_of(history)) }}
    {%- endif -%}
    {%- set open_rows -%}
        select key_json, {{ _changelake_typed_start(model) }} as island
        from ({{ changelake_history_frontier(store, published=true) }}) as frontier
        where is_current and {{ _changelake_typed_table(model.feed, model.source_table) }}
    {%- endset -%}
    {%- set from_frontier -%}
with

open_rows as (
    {{ open_rows }}
),

final as (
    select
        key_json,
        island.opening_change_id,
        {% for column, type in model.columns.items() -%}
        {{ _changelake_typed_value('image.' ~ _changelake_quoted(column), type) }} as {{ _changelake_quoted(column) }},
        {% endfor -%}
        island.valid_from_position,
        island.valid_from
    from (
        select
            *,
            from_json(
                island.row_json,
                {{ _changelake_literal('struct<' ~ _changelake_struct_fields(model.columns) ~ '>') }}
            ) as image
        from open_rows
    ) as starts
)

select * from final
    {%- endset -%}
    {#- The view already reads these very layers' frontier (its text names them, and a key gains
        a start only by a re-fold, and loses none without a new spec, which is new SQL): every
        live key had a start when it was built, and still has; no count is needed. A build
        with nothing new then reads nothing here. -#}
    {%- set existing = adapter.get_relation(database=this.database, schema=this.schema, identifier=this.identifier) -%}
    {%- if existing is not none and existing.is_view and not flags.FULL_REFRESH
        and _changelake_view_text_is(existing, from_frontier) -%}
        {{ return(from_frontier) }}
    {%- endif -%}
    {#- The store's property says every live key has the starts of the project's typed models
        (_changelake_typed_stale_tables): no count is needed either. -#}
    {%- if _changelake_stored_typed_specs(store) == _changelake_typed_specs(_changelake_typed_models()) -%}
        {{ return(from_frontier) }}
    {%- endif -%}
    {%- set missing = run_query('select count(*) from (' ~ open_rows ~ ') as open_rows where island is null').rows[0][0] -%}
    {%- if missing > 0 -%}
        {%- do log(model.name ~ ': ' ~ missing ~ " live keys have no start for this model's tracked columns"
            ~ ' (the model or its `tracked` is newer than their last change): '
            ~ this.identifier ~ ' reads the typed history until the next run of int_history_versions'
            ~ ' with new changes re-folds the table and stores them', info=true) -%}
        {{ return(_changelake_typed_current_of(history)) }}
    {%- endif -%}
    {{ return(from_frontier) }}
{% endmacro %}

{# purpose: the open versions of the typed history model `history`, read from it #}
{% macro _changelake_typed_current_of(history) %}
with

history as (
    select * from {{ history }}
),

final as (
    select * except (valid_to, valid_to_position, closing_change_id, is_current, is_deleted, version_number)
    from history
    where is_current
)

select * from final
{% endmacro %}

{#
    purpose: the typed history models of the project, from the graph: a list of {name, spec,
    feed, source_table, columns, tracked}, `spec` the model's name and a digest of its tracked
    columns (a change of `tracked` is a new spec, which no stored island start answers for);
    none listed while parsing
#}
{% macro _changelake_typed_models() %}
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

{# purpose: the Spark type of the history store's `islands` (python_udfs.scd2.VERSION_FIELDS) #}
{% macro _changelake_islands_type() %}
    {{- return('map<string, struct<row_json: string, valid_from: timestamp, valid_from_position: string, opening_change_id: string>>') -}}
{% endmacro %}

{#
    purpose: SQL expression, in the history store's fold (grouped by table and key): the typed
    models of the key's table, each with its tracked columns, as the `changelake_versions` UDF
    takes them (python_udfs.scd2.versions), null for a table with none
#}
{% macro _changelake_typed_tracked() %}
    {%- set type = 'array<struct<model: string, columns: array<string>>>' -%}
    {%- set tables = {} -%}
    {%- for model in _changelake_typed_models() -%}
        {%- set columns = [] -%}
        {%- for column in model.tracked -%}
            {%- do columns.append(_changelake_literal(column)) -%}
        {%- endfor -%}
        {%- set table = tables.setdefault(tojson([model.feed, model.source_table]), {
            'feed': model.feed, 'source_table': model.source_table, 'specs': []}) -%}
        {%- do table['specs'].append("named_struct('model', " ~ _changelake_literal(model.spec)
            ~ ", 'columns', cast(array(" ~ columns | join(', ') ~ ') as array<string>))') -%}
    {%- endfor -%}
    {%- if not tables -%}
        {{ return('cast(null as ' ~ type ~ ')') }}
    {%- endif -%}
    {%- set cases = [] -%}
    {%- for table in tables.values() -%}
        {%- do cases.append('when feed = ' ~ _changelake_literal(table.feed)
            ~ " and concat_ws('.', database_name, schema_name, table_name) = " ~ _changelake_literal(table.source_table)
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
{% macro _changelake_typed_stale_tables(store, named) %}
    {%- set models = _changelake_typed_models() -%}
    {%- set property = 'changelake.typed_specs' -%}
    {%- if _changelake_stored_typed_specs(store) == _changelake_typed_specs(models) -%}
        {{ return([]) }}
    {%- endif -%}
    {%- set stale = [] -%}
    {%- if models -%}
        {%- set counts = [] -%}
        {%- for model in models -%}
            {%- do counts.append('count_if(' ~ _changelake_typed_table(model.feed, model.source_table)
                ~ ' and ' ~ _changelake_typed_start(model) ~ ' is null) as m' ~ loop.index0) -%}
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
        {%- do run_query('alter table ' ~ store ~ ' unset tblproperties if exists (' ~ _changelake_literal(property) ~ ')') -%}
    {%- else -%}
        {%- do changelake_note_typed_specs_folded(store) -%}
    {%- endif -%}
    {{ return(stale) }}
{% endmacro %}

{# purpose: the history store's property `changelake.typed_specs` (none when it has none) #}
{% macro _changelake_stored_typed_specs(store) %}
    {%- if adapter.get_relation(database=store.database, schema=store.schema, identifier=store.identifier) is none -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set shown = run_query('show tblproperties ' ~ store ~ " ('changelake.typed_specs')").rows -%}
    {#- Spark answers a missing property with a sentence in place of its value -#}
    {{ return(shown[0][-1] if shown else none) }}
{% endmacro %}

{# purpose: the typed models `models` as the store's property `changelake.typed_specs` holds them: their specs, sorted, as JSON #}
{% macro _changelake_typed_specs(models) %}
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
        ~ _changelake_literal(_changelake_typed_specs(_changelake_typed_models())) ~ ')') -%}
{% endmacro %}

{#- purpose: a frontier row's start of `model`'s tracked version (null: not folded for it) -#}
{% macro _changelake_typed_start(model) -%}
    try_element_at(islands, {{ _changelake_literal(model.spec) }})
{%- endmacro %}
