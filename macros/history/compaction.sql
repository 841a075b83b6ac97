{#
    purpose: post-hook compacting the history store when the layers since the newest base
    number `max_layers` or more, or hold more than `max_share` of the base's rows: one base
    layer replaces them (docs/architecture.md, "The history store"). Going back from the newest
    base, a base is merged into the new one while it holds no more non-frontier rows than the
    deltas and the bases merged before it, so the bases stay logarithmic in number; and while
    more than `max_bases` would stay live, since a read of one key's history opens every live
    base. One ledger insert commits the new base (kind 'base') and retires the bases it merged
    (kind 'retired'); then every partition no longer live and named by no view is dropped, the
    rest at the run's end, once the views name the new base.

    A store whose current state is small (the newest base's frontier and the layers since
    holding `small_rows` rows or fewer) is compacted after every run that wrote a layer: such a
    compaction costs what the live rows cost, and spares every read of `cdc_current` the second
    query over the delta layers. The vars `changelake_history_max_layers`,
    `changelake_history_max_share`, `changelake_history_small_rows` and
    `changelake_history_max_bases` override the four limits (a `small_rows` of 0: no store is
    small; `max_bases` is 1 or more).
#}
{% macro changelake_compact_history(max_layers=8, max_share=0.2, small_rows=100000, max_bases=3) %}
    {#- also after a run with nothing new: a compaction a killed run left undone is done then -#}
    {%- if not execute -%}
        {{ return('') }}
    {%- endif -%}
    {%- set max_layers = var('changelake_history_max_layers', max_layers) -%}
    {%- set max_share = var('changelake_history_max_share', max_share) -%}
    {%- set small_rows = var('changelake_history_small_rows', small_rows) -%}
    {%- set max_bases = var('changelake_history_max_bases', max_bases) -%}
    {%- set ledger = changelake_ledger_rows(this.identifier) -%}
    {%- set stats -%}
        with live_layers as ({{ changelake_live_layers(this.identifier) }})
        select
            count_if(not live_layers.is_base) as delta_layers,
            coalesce(sum(case when not live_layers.is_base then ledger.rows_written end), 0) as delta_rows,
            coalesce(sum(case when live_layers.is_base and live_layers.has_live_frontier then ledger.rows_written end), 0) as base_rows,
            max(case when live_layers.is_base and live_layers.has_live_frontier then live_layers.batch_id end) as base_id
        from live_layers
        inner join {{ ledger }} as ledger
            on live_layers.batch_id = ledger.batch_id and ledger.kind in ('batch', 'base')
    {%- endset -%}
    {%- set row = run_query(stats).rows[0] -%}
    {%- set due = row[0] >= 1 and (row[0] >= max_layers or row[1] > max_share * row[2]) -%}
    {%- if row[0] >= 1 and not due and small_rows > 0 -%}
        {#- the newest base's frontier (the current versions as of that base): a count of one
            partition, read from the parquet footers -#}
        {%- set frontier_rows = 0 if row[3] is none else run_query(
            'select count(*) from ' ~ this ~ ' where batch_id = ' ~ changelake_literal(row[3])
            ~ " and part = 'frontier'").rows[0][0] -%}
        {%- set due = row[1] + frontier_rows <= small_rows -%}
    {%- endif -%}
    {%- if due -%}
        {%- set layer = invocation_id ~ '-base' -%}
        {%- set bases = _changelake_bases_to_merge(max_bases) -%}
        {%- set merged = bases.merged -%}
        {%- set key = changelake_table_id() + ['key_json'] -%}
        {%- set columns = key + changelake_version_columns() + ['last_position'] + changelake_parsed_columns() -%}
        {%- set merged_list = changelake_sql_list(merged) -%}
        {%- set compaction -%}
            insert into {{ this }}
            with

            folded_layers as (
                select batch_id
                from ({{ changelake_live_layers(this.identifier) }}) as live_layers
                where not live_layers.is_base or live_layers.batch_id in {{ merged_list }}
            ),

            -- the truncates (and, while older bases stay, the supersessions, which void
            -- versions in those) of the folded layers, as they are
            kept_rows as (
                select stored.*
                from {{ this }} as stored
                inner join folded_layers on stored.batch_id = folded_layers.batch_id
                where stored.part in ({{ "'superseded', 'truncate'" if bases.older_bases_stay else "'truncate'" }})
            ),

            closed as (
                select * except (layer_committed_at)
                from ({{ changelake_history_closed(this, this.identifier,
                    layers='(not stored.layer.is_base or stored.batch_id in ' ~ merged_list ~ ')') }}) as closed
            ),

            frontier as (
                select * except (layer_committed_at, is_base)
                from ({{ changelake_history_frontier(this, this.identifier) }}) as frontier
            )

            select {{ changelake_layer_rebalance() }} *
            from (
                select {{ columns | join(', ') }}, '{{ layer }}' as batch_id, if(is_current, 'frontier', 'ended') as part from frontier
                union all
                select {{ columns | join(', ') }}, '{{ layer }}' as batch_id, 'closed' as part from closed
                union all
                select {{ columns | join(', ') }}, '{{ layer }}' as batch_id, part from kept_rows
            ) as base_rows
            {{ changelake_layer_order() }}
        {%- endset -%}
        {%- do run_query(compaction) -%}
        {%- set commit -%}
            insert into {{ changelake_ledger(this.identifier) }} {{ changelake_ledger_tail() }}
            select /*+ coalesce(1) */ * from (
                select
                    'base' as kind,
                    '{{ layer }}' as batch_id,
                    current_timestamp() as committed_at,
                    count(*) as rows_written
                from {{ this }}
                where batch_id = '{{ layer }}'
                {%- for base in merged %}
                union all
                select 'retired', {{ changelake_literal(base) }}, current_timestamp(), 0
                {%- endfor %}
            ) as ledger_rows
        {%- endset -%}
        {%- do run_query(commit) -%}
        {#- this run's own layer stays until the run's end: its versions and keys are what the
            run's data tests check (macros/materializations/test_scope.sql) -#}
        {%- do changelake_drop_dead_layers(this, keep=[invocation_id]) -%}
    {%- endif -%}
    {{ return('select 1') }}
{% endmacro %}

{#
    purpose: the live bases a compaction due now merges into its new base, newest first (see
    changelake_compact_history), from the non-frontier rows of the live layers; and whether
    older bases stay live: {'merged': [batch ids], 'older_bases_stay': bool}. A base is merged
    while its rows are no more than those merged before it (the deltas' and the newer bases'),
    and while more than `max_bases` bases would stay live otherwise (the new one counted): the
    newest ones first, so what a compaction reads stays a suffix of the live layers.
#}
{% macro _changelake_bases_to_merge(max_bases) %}
    {%- if max_bases is not number or max_bases < 1 -%}
        {{ exceptions.raise_compiler_error(
            'changelake_history_max_bases must be a number of at least 1, not ' ~ max_bases) }}
    {%- endif -%}
    {%- set query -%}
        select
            live_layers.batch_id,
            live_layers.is_base,
            count(stored.part) as rows
        from ({{ changelake_live_layers(this.identifier) }}) as live_layers
        left join (
            select batch_id, part from {{ this }} where part not in {{ changelake_sql_list(changelake_frontier_parts()) }}
        ) as stored on live_layers.batch_id = stored.batch_id
        group by live_layers.batch_id, live_layers.is_base, live_layers.committed_at
        order by live_layers.committed_at desc
    {%- endset -%}
    {%- set rows = run_query(query).rows -%}
    {%- set walk = namespace(rows=0, merging=true) -%}
    {%- for row in rows if not row[1] -%}
        {%- set walk.rows = walk.rows + row[2] -%}
    {%- endfor -%}
    {%- set bases = [] -%}
    {%- for row in rows if row[1] -%}
        {%- do bases.append(row) -%}
    {%- endfor -%}
    {%- set merged = [] -%}
    {%- for row in bases -%}
        {#- left unmerged, this base and every older one stay live, beside the new base -#}
        {%- set staying = (bases | length) - loop.index0 + 1 -%}
        {%- if walk.merging and (row[2] <= walk.rows or staying > max_bases) -%}
            {%- do merged.append(row[0]) -%}
            {%- set walk.rows = walk.rows + row[2] -%}
        {%- else -%}
            {%- set walk.merging = false -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return({'merged': merged, 'older_bases_stay': merged | length < bases | length}) }}
{% endmacro %}

{#
    purpose: drop the partitions of the history store `relation` that no reader sees any more:
    not live in its ledger (replaced by a compaction, or left by a killed run) and named by no
    view (`_changelake_layers_named_by_views`), except those of the batches `keep`
#}
{% macro changelake_drop_dead_layers(relation, keep=[]) %}
    {%- set live -%}
        select batch_id, has_live_frontier from ({{ changelake_live_layers(relation.identifier) }}) as live_layers
    {%- endset -%}
    {%- set live_frontier = {} -%}
    {%- for row in run_query(live).rows -%}
        {%- do live_frontier.update({row[0]: row[1]}) -%}
    {%- endfor -%}
    {%- set named = _changelake_layers_named_by_views(relation) -%}
    {%- if named is none -%}
        {#- a view's partitions are not recorded: drop nothing until its next build records them -#}
        {{ return('') }}
    {%- endif -%}
    {%- set dead = [] -%}
    {%- for spec in changelake_partitions(relation) if (spec.batch_id not in live_frontier
        or (spec.part in changelake_frontier_parts() and not live_frontier[spec.batch_id]))
        and (spec.batch_id ~ '/' ~ spec.part) not in named and spec.batch_id not in keep -%}
        {%- do dead.append(spec) -%}
    {%- endfor -%}
    {%- do changelake_drop_partitions(relation, dead) -%}
{% endmacro %}

{#
    purpose: the partitions of the history store `relation` that a view built on it names, as
    'batch_id/part' texts, from each view's properties `changelake.reads` and
    `changelake.reads_next` (macros/materializations/view.sql): the views as they are now,
    whichever build made them. Views are found in the graph (the models built as views on the
    store); those not built are skipped. None when a view has no such property (built before
    it was recorded, or killed between its create and its record): every partition may be named.
#}
{% macro _changelake_layers_named_by_views(relation) %}
    {%- set views = [] -%}
    {%- for node in graph.nodes.values() if node.resource_type == 'model'
        and node.package_name == project_name and node.config.materialized == 'view' -%}
        {%- for parent in node.depends_on.nodes if parent.startswith('model.')
            and graph.nodes[parent].alias == relation.identifier -%}
            {%- do views.append(node.alias) -%}
        {%- endfor -%}
    {%- endfor -%}
    {%- set named = [] -%}
    {%- if not views -%}
        {{ return(named) }}
    {%- endif -%}
    {%- for row in run_query('show tables in ' ~ relation.schema ~ " like '" ~ (views | unique | join('|')) ~ "'") -%}
        {%- set properties = {} -%}
        {%- for property in run_query('show tblproperties ' ~ relation.schema ~ '.' ~ row[1]).rows -%}
            {%- do properties.update({property[0]: property[1]}) -%}
        {%- endfor -%}
        {%- if 'changelake.reads' not in properties -%}
            {{ return(none) }}
        {%- endif -%}
        {%- do named.extend((properties['changelake.reads'] ~ ' ' ~ properties.get('changelake.reads_next', '')).split()) -%}
    {%- endfor -%}
    {{ return(named) }}
{% endmacro %}

{#
    purpose: on-run-end: drop the history store's partitions that are dead and that no view
    names any more: those a compaction of this run replaced, once the views built after it name
    its base (or of an earlier run whose views were not built again until now). A `dbt build`
    or `dbt run` that created or changed a view only (a run that changes no view makes no
    partition unnamed), once the store exists.
#}
{% macro changelake_drop_unpublished_layers(model_identifier='int_history_versions') %}
    {%- if not execute or flags.WHICH not in ('build', 'run') or not changelake_views_written_now() -%}
        {{ return('') }}
    {%- endif -%}
    {%- set ledger = changelake_ledger(model_identifier).split('.') -%}
    {%- set tables = run_query("show tables in " ~ target.schema ~ " like '" ~ model_identifier ~ "|" ~ ledger[1] ~ "'") -%}
    {%- if tables.rows | length == 2 -%}
        {%- do changelake_drop_dead_layers(api.Relation.create(
            schema=target.schema, identifier=model_identifier, type='table')) -%}
    {%- endif -%}
    {{ return('') }}
{% endmacro %}
