{#
    purpose: on-run-start: create every incremental model's ledger; move the rows of a ledger
    in the earlier layout (`changelake_batches__<model>`, one unpartitioned table) into it and
    drop the old table (a run killed in between moves them again: the segment is replaced);
    then, from one read of every ledger (`changelake_ledger_state`), compact the ledgers whose
    tail holds `max_tail` commits or more (see the top of macros/ledger/ledger.sql) and merge the segments of
    the segmented tables where `segments_max_tail` consumed batches are live (macros/ledger/segments.sql).
    What that read found is remembered for the invocation (`changelake_run_start` in the graph
    dict dbt shares between its hooks and nodes): each consumer's pending batches, which the
    change log and the history ask again only when a model upstream of them writes in this
    invocation (`changelake_written_now`), and each segmented model's live segments after the
    merges (`changelake_committed_in_run`, macros/ledger/segments.sql). `tables`: the names of the
    schema's tables, as the run's start listed them
#}
{% macro changelake_maintain_ledgers(tables, max_tail=8, segments_max_tail=8) %}
    {%- set models = changelake_incremental_models() -%}
    {%- for model in models -%}
        {%- if changelake_ledger(model).split('.')[-1] not in tables -%}
            {%- do run_query(changelake_ledger_ddl(model)) -%}
        {%- endif -%}
        {%- if 'changelake_batches__' ~ model in tables -%}
            {%- set ledger = changelake_ledger(model) -%}
            {%- do run_query('alter table ' ~ ledger ~ " drop if exists partition (segment = 'earlier')") -%}
            {%- do run_query('insert into ' ~ ledger ~ " partition (segment = 'earlier')"
                ~ ' select distinct kind, batch_id, committed_at, rows_written from '
                ~ target.schema ~ '.changelake_batches__' ~ model) -%}
            {%- do run_query('drop table ' ~ target.schema ~ '.changelake_batches__' ~ model) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- set segmented = changelake_segmented_models() -%}
    {%- set existing = changelake_segment_earlier_tables(segmented, tables) -%}
    {%- set state = changelake_ledger_state(models, segmented) -%}
    {#- each segmented model's live segments by name: consumed ones and pending batches -#}
    {%- set live_names = {} -%}
    {%- for model, consumer in segmented.items() -%}
        {%- do live_names.update({model: (state.live.get(model, []) | map(attribute='name') | list)
            + (state.pending[consumer].get(model, {}).keys() | list)}) -%}
    {%- endfor -%}
    {%- do changelake_note_run_start({'pending': state.pending, 'live_segments': live_names}) -%}
    {%- set live = {} -%}
    {%- for model, segments in state.live.items() if model in existing -%}
        {%- do live.update({model: segments}) -%}
    {%- endfor -%}
    {#- the steps due, each with how far past due it is (1: just due) -#}
    {%- set due = [] -%}
    {%- for model, commits in state.tail.items() if commits >= max_tail -%}
        {%- do due.append({'model': model, 'step': 'ledger', 'overdue': commits / max_tail}) -%}
    {%- endfor -%}
    {%- for model, segments in live.items() if changelake_segments_to_merge(segments, segments_max_tail) -%}
        {%- set batches = segments | selectattr('kind', 'equalto', 'batch') | list | length -%}
        {%- do due.append({'model': model, 'step': 'segments', 'overdue': batches / segments_max_tail}) -%}
    {%- endfor -%}
    {#- Every table comes due once per `max_tail` runs, in a project's first runs all in the
        same run: a run does at most its share (the tables accruing divided evenly over
        `max_tail` runs, and one more), most overdue first, so no run pays for all of them
        (docs/decisions.md). A step twice past due is done whatever the share, so no tail or
        segment count grows past 2x its limit. -#}
    {%- set tables = (state.tail.values() | select('gt', 0) | list | length)
        + (live.values() | select | list | length) -%}
    {%- set share = (tables / ([max_tail, segments_max_tail] | min)) | round(0, 'ceil') | int + 1 -%}
    {%- for step in due | sort(attribute='model') | sort(attribute='overdue', reverse=true) -%}
        {%- if loop.index > share and step.overdue < 2 -%}
        {%- elif step.step == 'ledger' -%}
            {%- do _changelake_compact_ledger(step.model) -%}
        {%- else -%}
            {%- do changelake_merge_segments({step.model: live[step.model]}, segments_max_tail, live_names) -%}
        {%- endif -%}
    {%- endfor -%}
{% endmacro %}

{#
    purpose: one query over every ledger of `models`: {'tail': {model: commits in its
    ledger's tail}, 'live': {model: its live segments that its consumer consumed, oldest first, each
    {name, kind, rows}}, 'pending': {consumer: {model: {batch_id: rows}}}: the batches each
    consumer has not consumed yet} for the segmented models of `segmented` ({model: consumer}).
    Each ledger is read once (a consumer's twice: its own rows, and the batches it consumed). A
    batch is merged only once consumed, so a pending batch is a live one.
#}
{% macro changelake_ledger_state(models, segmented) %}
    {%- set consumed_selects = [] -%}
    {%- for consumer in segmented.values() | unique -%}
        {%- do consumed_selects.append('select distinct ' ~ changelake_literal(consumer) ~ ' as consumer, batch_id from '
            ~ changelake_ledger(consumer) ~ " where kind = 'consumed'") -%}
    {%- endfor -%}
    {%- set owner_selects = [] -%}
    {%- for model, consumer in segmented.items() -%}
        {%- do owner_selects.append('select ' ~ changelake_literal(model) ~ ' as model, '
            ~ changelake_literal(consumer) ~ ' as consumer') -%}
    {%- endfor -%}
    {%- set query -%}
        with

        ledger_rows as (
            {%- for model in models %}
            select
                {{ changelake_literal(model) }} as model,
                kind,
                batch_id,
                committed_at,
                rows_written,
                segment = 'tail' as in_tail
            from {{ changelake_ledger(model) }}
            {%- if not loop.last %}
            union all
            {%- endif %}
            {%- endfor %}
        ),

        -- per model (its tail's rows) and per model and batch (a segment's state)
        state as (
            select
                model,
                batch_id,
                grouping(batch_id) = 1 as is_model,
                -- commits in its tail (a commit's rows share their commit time)
                count(distinct case when in_tail then committed_at end) as tail_commits,
                max(case when kind in ('batch', 'segment') then kind end) as kind,
                max(case when kind in ('batch', 'segment') then committed_at end) as committed_at,
                max(case when kind in ('batch', 'segment') then rows_written end) as rows_written,
                -- a merge's segment holds consumed batches only
                bool_or(kind = 'segment') as is_merged,
                -- live: written (a batch, or a merge's segment) and not retired by a later merge
                bool_or(kind in ('batch', 'segment')) and not bool_or(kind = 'retired') as is_live
            from ledger_rows
            group by grouping sets ((model), (model, batch_id))
        ),

        consumed as (
            {{ changelake_union_all(consumed_selects,
                'select cast(null as string) as consumer, cast(null as string) as batch_id') }}
        ),

        owners as (
            {{ changelake_union_all(owner_selects,
                'select cast(null as string) as model, cast(null as string) as consumer') }}
        )

        -- unordered: a global sort would cost a sampling job; the segments are ordered below
        select
            state.model,
            state.committed_at,
            state.batch_id,
            state.is_model,
            state.tail_commits,
            state.kind,
            state.rows_written,
            state.is_merged or consumed.batch_id is not null as is_consumed,
            owners.consumer
        from state
        left join owners on state.model = owners.model
        left join consumed
            on owners.consumer = consumed.consumer and state.batch_id = consumed.batch_id
        where state.is_model or (state.is_live and owners.model is not null)
    {%- endset -%}
    {%- set out = {'tail': {}, 'live': {}, 'pending': {}} -%}
    {%- for consumer in segmented.values() -%}
        {%- do out.pending.setdefault(consumer, {}) -%}
    {%- endfor -%}
    {%- if not models -%}
        {{ return(out) }}
    {%- endif -%}
    {%- set segments = [] -%}
    {%- for row in run_query(query) -%}
        {%- if row[3] -%}
            {%- do out.tail.update({row[0]: row[4]}) -%}
        {%- else -%}
            {#- model, commit time and batch first: sorting orders them by those -#}
            {%- do segments.append(row | list) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- for row in segments | sort -%}
        {%- if row[7] -%}
            {%- do out.live.setdefault(row[0], []).append({'name': row[2], 'kind': row[5], 'rows': row[6]}) -%}
        {%- elif row[5] == 'batch' -%}
            {%- do out.pending[row[8]].setdefault(row[0], {}).update({row[2]: row[6]}) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(out) }}
{% endmacro %}

{# purpose: write a ledger's rows, once each, as one file in a new segment; drop the others #}
{% macro _changelake_compact_ledger(model_identifier) %}
    {%- set ledger = changelake_ledger(model_identifier) -%}
    {%- set segment = 'compacted-' ~ invocation_id -%}
    {%- do run_query('insert into ' ~ ledger ~ ' partition (segment = ' ~ changelake_literal(segment) ~ ')'
        ~ ' select /*+ coalesce(1) */ * from ' ~ changelake_ledger_rows(model_identifier) ~ ' as ledger_rows') -%}
    {%- set others = [] -%}
    {%- for spec in changelake_partitions(ledger) if spec.segment != segment -%}
        {%- do others.append(spec) -%}
    {%- endfor -%}
    {%- do changelake_drop_partitions(ledger, others) -%}
{% endmacro %}
