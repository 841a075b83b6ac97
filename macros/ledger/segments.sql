{#
    Segments: the files of the decoded tables and the change log stay few however many runs
    wrote them.

    These tables are partitioned by `segment`. A run writes its batch into the segment named by
    its batch id, and the batch's ledger row (kind 'batch') makes that segment live. Readers see
    the live segments only (`changelake_committed`).

    The run's start (on-run-start, before any model) merges segments. Once a table has
    `max_tail` live batch segments that the model downstream has consumed (the change log for
    decoded batches, the history for change-log batches), the newest live segments, from the
    oldest one holding no more rows than all those after it, are copied, their rows unchanged
    (batch ids included), into one new segment `merged-<invocation>`. One ledger insert (a
    single file) commits the merge: a row of kind 'segment' (the new segment is live) and one
    of kind 'retired' for each segment it replaces. Then every partition that is not live is
    dropped.

    Each merged segment holds more rows than all newer segments together, so a table keeps a
    number of segments logarithmic in its rows, and a merge copies at least twice the rows of
    the oldest segment it replaces: a row is copied about log2(rows) times in its life, so the
    cost of merging grows with the data, not with the number of runs.

    A run killed before the commit leaves a segment no reader sees, dropped by the next merge;
    killed after it, the replaced segments, which no reader sees either. Batches not consumed
    yet are never merged: a run's pending batches each keep their own segment, so reading them
    prunes to their files (`changelake_pending_rows`).
#}

{# purpose: the segmented models (by identifier), each with the model that consumes its batches #}
{% macro changelake_segmented_models() %}
    {%- set out = {} -%}
    {%- if not execute -%}
        {#- parse time: the graph is not built yet -#}
        {{ return(out) }}
    {%- endif -%}
    {%- for model in changelake_incremental_models('decoded_') -%}
        {%- do out.update({model: 'int_changes_unioned'}) -%}
    {%- endfor -%}
    {%- do out.update({'int_changes_unioned': 'int_history_versions'}) -%}
    {{ return(out) }}
{% endmacro %}

{# purpose: the segment column of a segmented model's row: this run's batch #}
{% macro changelake_segment_column() %}
    {{- return("'" ~ invocation_id ~ "' as segment") -}}
{% endmacro %}

{#
    purpose: SQL expression: a segmented model's live segments (batch and merged segments not
    retired by a later merge), an array from one scalar subquery over its ledger
#}
{% macro _changelake_live_segment_array(model_identifier) %}
    (
        select array_except(
            collect_set(case when ledger.kind in ('batch', 'segment') then ledger.batch_id end),
            collect_set(case when ledger.kind = 'retired' then ledger.batch_id end)
        )
        from {{ changelake_ledger(model_identifier) }} as ledger
    )
{% endmacro %}

{# purpose: SQL (a select of batch_id) of a segmented model's live segments #}
{% macro _changelake_live_segments(model_identifier) %}
    select explode({{ _changelake_live_segment_array(model_identifier) }}) as batch_id
{% endmacro %}

{#
    purpose: SQL predicate true for rows (of `relation_alias`) in a live segment of a segmented
    model. The live segments are one scalar subquery (computed once per query and reused
    wherever the query names it), not an IN subquery: Spark rewrites those into joins, a
    shuffle or a broadcast each, and a query reading many views over segmented tables (the
    change log reads each feed's staging view several times over) then plans hundreds of them.
#}
{% macro changelake_committed(relation_alias, model_identifier) %}
    array_contains({{ _changelake_live_segment_array(model_identifier) }}, {{ relation_alias }}.segment)
{% endmacro %}

{#
    purpose: SQL predicate like `changelake_committed`, for the queries a run's incremental
    models run while they build (a decoded model's look for its tried files, the change log's
    and the history's reads of what is logged): the live segments as literals, those the run's
    start found and left after its merges (`changelake_run_start`), with `committed_now`, the
    batches of the model committed since in this invocation, which the caller knows. Literals
    prune the read to those partitions when the query is planned, and no ledger is queried:
    the scalar subquery is two Spark jobs of its own in every query that names it. Where the
    run's start did not read the ledgers, or the model wrote in this invocation and the caller
    gives no `committed_now`, it is `changelake_committed`; the views and the tests, read
    after the run too, always use that.
#}
{% macro changelake_committed_in_run(relation_alias, model_identifier, committed_now=none) %}
    {%- set live = changelake_run_start().get('live_segments', {}).get(model_identifier) -%}
    {%- if live is none or (committed_now is none and changelake_written_now([model_identifier])) -%}
        {{ return(changelake_committed(relation_alias, model_identifier)) }}
    {%- endif -%}
    {%- set names = (live + (committed_now or []) | list) | unique | list -%}
    {%- if not names -%}
        {{ return('false') }}
    {%- endif -%}
    {{ return(relation_alias ~ '.segment in ' ~ changelake_sql_list(names)) }}
{% endmacro %}

{#
    purpose: SQL predicate true for rows (of `relation_alias`, optional) of the `batches` given
    (a list of batch ids not consumed yet, so each still in its own segment): the segment filter
    prunes the read to their files
#}
{% macro changelake_pending_rows(batches, relation_alias=none) %}
    {%- set prefix = relation_alias ~ '.' if relation_alias else '' -%}
    {%- set listed = changelake_sql_list(batches) -%}
    {{ return(prefix ~ 'segment in ' ~ listed ~ ' and ' ~ prefix ~ 'batch_id in ' ~ listed) }}
{% endmacro %}

{#
    purpose: on-run-start: merge the segments of every segmented model where `max_tail` consumed
    batches are live (see the top of macros/ledger/segments.sql); `live` is each model's live consumed segments,
    oldest first (from `changelake_ledger_state`, macros/ledger/ledger.sql); `live_names`, each
    model's live segments by name, is updated to what the merges leave
#}
{% macro changelake_merge_segments(live, max_tail=8, live_names=none) %}
    {%- for model, segments in live.items() -%}
        {%- set merged = changelake_segments_to_merge(segments, max_tail) -%}
        {%- if merged -%}
            {%- do _changelake_merge(model, merged) -%}
            {%- if live_names is not none -%}
                {%- do live_names.update({model: (live_names.get(model, []) | reject('in', merged) | list)
                    + ['merged-' ~ invocation_id]}) -%}
            {%- endif -%}
        {%- endif -%}
    {%- endfor -%}
{% endmacro %}

{#
    purpose: which of a model's live consumed `segments` (oldest first: name, kind, rows) to
    merge: none while fewer than `max_tail` are batches; else the newest ones from the oldest
    segment holding no more rows than all after it, and every batch at least
#}
{% macro changelake_segments_to_merge(segments, max_tail) %}
    {%- set batches = segments | selectattr('kind', 'equalto', 'batch') | list -%}
    {%- if batches | length < max_tail -%}
        {{ return([]) }}
    {%- endif -%}
    {%- set start = namespace(index=segments.index(batches[0])) -%}
    {%- for segment in segments[:start.index] -%}
        {%- set after = segments[loop.index:] | sum(attribute='rows') -%}
        {%- if start.index == segments.index(batches[0]) and segment.rows <= after -%}
            {%- set start.index = loop.index0 -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(segments[start.index:] | map(attribute='name') | list) }}
{% endmacro %}

{# purpose: merge the segments `names` of a model's table into one, commit, drop what is dead #}
{% macro _changelake_merge(model_identifier, names) %}
    {%- set relation = target.schema ~ '.' ~ model_identifier -%}
    {%- set segment = 'merged-' ~ invocation_id -%}
    {%- set spec = 'partition (segment = ' ~ changelake_literal(segment) ~ ')' -%}
    {#- registered first: the files of a merge killed mid-write are dropped with the partition -#}
    {%- do run_query('alter table ' ~ relation ~ ' add if not exists ' ~ spec) -%}
    {%- do run_query('insert into ' ~ relation ~ ' ' ~ spec
        ~ ' select /*+ rebalance */ * except (segment) from ' ~ relation
        ~ ' where segment in ' ~ changelake_sql_list(names)) -%}
    {%- set commit -%}
        insert into {{ changelake_ledger(model_identifier) }} {{ changelake_ledger_tail() }}
        select /*+ coalesce(1) */ kind, batch_id, current_timestamp() as committed_at, rows_written
        from (
            select 'segment' as kind, {{ changelake_literal(segment) }} as batch_id, count(*) as rows_written
            from {{ relation }}
            where segment = {{ changelake_literal(segment) }}
            {%- for name in names %}
            union all
            select 'retired', {{ changelake_literal(name) }}, 0
            {%- endfor %}
        ) as ledger_rows
    {%- endset -%}
    {%- do run_query(commit) -%}
    {%- do _changelake_drop_dead_segments(model_identifier) -%}
{% endmacro %}

{# purpose: drop the partitions of a segmented model's table that are not live #}
{% macro _changelake_drop_dead_segments(model_identifier) %}
    {%- set relation = target.schema ~ '.' ~ model_identifier -%}
    {%- set live = run_query(_changelake_live_segments(model_identifier)).columns[0].values() -%}
    {%- set dead = [] -%}
    {%- for spec in changelake_partitions(relation) if spec.segment not in live -%}
        {%- do dead.append(spec) -%}
    {%- endfor -%}
    {%- do changelake_drop_partitions(relation, dead) -%}
{% endmacro %}

{#
    purpose: move tables of the earlier layout (no segment column) into a table of this layout,
    their committed rows only: the batches consumed downstream into segment 'earlier', the
    others each into its own; returns the tables existing after. Each
    step can be killed: the next run's start finds where it stopped from the tables there
    (`<model>__segmented` being written, `<model>__unsegmented` the table it replaced), in
    `listed`, the names of the schema's tables as the run's start listed them.
#}
{% macro changelake_segment_earlier_tables(models, listed) %}
    {%- set tables = listed | list -%}
    {%- set existing = [] -%}
    {%- for model in models -%}
        {%- set relation = target.schema ~ '.' ~ model -%}
        {%- set building = relation ~ '__segmented' -%}
        {%- set replaced = relation ~ '__unsegmented' -%}
        {%- if model not in tables and model ~ '__segmented' in tables
            and model ~ '__unsegmented' in tables -%}
            {#- killed between the two renames -#}
            {%- do run_query('alter table ' ~ building ~ ' rename to ' ~ relation) -%}
            {%- do tables.append(model) -%}
        {%- elif model ~ '__segmented' in tables -%}
            {#- killed while the new table was written: start again -#}
            {%- do run_query('drop table ' ~ building) -%}
        {%- endif -%}
        {%- if model in tables and not _changelake_has_segments(relation) -%}
            {#- created empty, never as a select: no file is written before the table exists -#}
            {%- set columns = changelake_query_columns(
                model ~ '__segmented', 'select *, ' ~ "'earlier' as segment from " ~ relation) -%}
            {%- do run_query('create table ' ~ building ~ ' (' ~ columns | join(', ')
                ~ ') using parquet partitioned by (segment)') -%}
            {#- committed rows: consumed batches into segment 'earlier', a pending one into its own -#}
            {%- set copy -%}
                insert into {{ building }}
                select
                    earlier.*,
                    case when consumed.batch_id is null then earlier.batch_id else 'earlier' end as segment
                from {{ relation }} as earlier
                left join (
                    select distinct batch_id from {{ changelake_ledger(models[model]) }} where kind = 'consumed'
                ) as consumed on earlier.batch_id = consumed.batch_id
                where earlier.batch_id in (
                    select batch_id from {{ changelake_ledger(model) }} where kind = 'batch'
                )
            {%- endset -%}
            {%- do run_query(copy) -%}
            {%- do run_query('insert into ' ~ changelake_ledger(model) ~ ' ' ~ changelake_ledger_tail()
                ~ " select 'segment', 'earlier', current_timestamp(), count(*) from " ~ building
                ~ " where segment = 'earlier'") -%}
            {%- do run_query('alter table ' ~ relation ~ ' rename to ' ~ replaced) -%}
            {%- do run_query('alter table ' ~ building ~ ' rename to ' ~ relation) -%}
            {%- do run_query('drop table ' ~ replaced) -%}
        {%- elif model ~ '__unsegmented' in tables -%}
            {#- killed after the second rename -#}
            {%- do run_query('drop table ' ~ replaced) -%}
        {%- endif -%}
        {%- if model in tables -%}
            {%- do existing.append(model) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(existing) }}
{% endmacro %}

{# purpose: whether the table `relation` (schema.identifier) has the segment column #}
{% macro _changelake_has_segments(relation) %}
    {%- set parts = relation.split('.') -%}
    {%- set cached = adapter.get_relation(database=none, schema=parts[0], identifier=parts[1]) -%}
    {%- set information = (cached.information if cached is not none else '') or '' -%}
    {%- if ' |-- ' in information -%}
        {{ return(' |-- segment: ' in information) }}
    {%- endif -%}
    {{ return('segment' in run_query('describe table ' ~ relation).columns[0].values()) }}
{% endmacro %}
