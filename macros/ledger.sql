{#
    The run ledger. Each incremental model owns a ledger table: one row per committed batch
    (kind 'batch'); for the change log and the history, one row per upstream batch consumed
    (kind 'consumed'); for the segmented tables, rows of the segments merges made and retired
    (kinds 'segment' and 'retired', macros/segments.sql). One writer per table: concurrent
    appends to one parquet table from one Spark application are not safe, and dbt runs models
    on several threads.

    Rows are written first, tagged with the run's batch id (dbt's invocation id); the ledger
    row last. A run killed anywhere before its ledger row is written leaves rows whose batch is
    not in the ledger: every reader ignores them, and the next run reads their input again.
    Parquet appends are not atomic; this makes them safe to repeat.

    Each commit appends one small file to the ledger's partition `segment = 'tail'`. So that
    the files every reader opens do not grow with the number of runs, the run's start
    compacts a ledger whose tail holds `max_tail` commits or more: its rows, once each, are
    written as one file in a new segment, then the other segments are dropped. A run killed in
    between leaves rows twice, which no reader minds: readers ask whether a batch is in the
    ledger, or read `changelake_ledger_rows` (each row once).
#}

{# purpose: the ledger relation of an incremental model (by its identifier) #}
{% macro changelake_ledger(model_identifier) %}
    {{ return(target.schema ~ '.changelake_ledger__' ~ model_identifier) }}
{% endmacro %}

{# purpose: SQL (a parenthesized select) of a model's ledger rows, each once #}
{% macro changelake_ledger_rows(model_identifier) %}
    {{ return('(select distinct kind, batch_id, committed_at, rows_written from '
        ~ changelake_ledger(model_identifier) ~ ')') }}
{% endmacro %}

{# purpose: the partition clause of an insert committing rows to a ledger #}
{% macro changelake_ledger_tail() %}
    {{ return("partition (segment = 'tail')") }}
{% endmacro %}

{# purpose: DDL creating a model's ledger when it does not exist #}
{% macro _changelake_ledger_ddl(model_identifier) %}
    create table if not exists {{ changelake_ledger(model_identifier) }} (
        kind string,
        batch_id string,
        committed_at timestamp,
        rows_written bigint,
        segment string
    )
    using parquet
    partitioned by (segment)
{% endmacro %}

{#
    purpose: on-run-start: create every incremental model's ledger; move the rows of a ledger
    in the earlier layout (`changelake_batches__<model>`, one unpartitioned table) into it and
    drop the old table (a run killed in between moves them again: the segment is replaced);
    then, from one read of every ledger (`_changelake_ledger_state`), compact the ledgers whose
    tail holds `max_tail` commits or more (see the top of this file) and merge the segments of
    the segmented tables where `segments_max_tail` consumed batches are live (macros/segments.sql).
    What that read found is remembered for the invocation (`changelake_run_start` in the graph
    dict dbt shares between its hooks and nodes): each consumer's pending batches, which the
    change log and the history ask again only when a model upstream of them writes in this
    invocation (`_changelake_written_now`), and each segmented model's live segments after the
    merges (`changelake_committed_in_run`, macros/segments.sql). `tables`: the names of the
    schema's tables, as the run's start listed them
#}
{% macro _changelake_maintain_ledgers(tables, max_tail=8, segments_max_tail=8) %}
    {%- set models = _changelake_incremental_models() -%}
    {%- for model in models -%}
        {%- if changelake_ledger(model).split('.')[-1] not in tables -%}
            {%- do run_query(_changelake_ledger_ddl(model)) -%}
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
    {%- set segmented = _changelake_segmented_models() -%}
    {%- set existing = _changelake_segment_earlier_tables(segmented, tables) -%}
    {%- set state = _changelake_ledger_state(models, segmented) -%}
    {#- each segmented model's live segments by name: consumed ones and pending batches -#}
    {%- set live_names = {} -%}
    {%- for model, consumer in segmented.items() -%}
        {%- do live_names.update({model: (state.live.get(model, []) | map(attribute='name') | list)
            + (state.pending[consumer].get(model, {}).keys() | list)}) -%}
    {%- endfor -%}
    {%- do graph.setdefault('changelake_run_start', {}).update(
        {invocation_id: {'pending': state.pending, 'live_segments': live_names}}) -%}
    {%- set live = {} -%}
    {%- for model, segments in state.live.items() if model in existing -%}
        {%- do live.update({model: segments}) -%}
    {%- endfor -%}
    {#- the steps due, each with how far past due it is (1: just due) -#}
    {%- set due = [] -%}
    {%- for model, commits in state.tail.items() if commits >= max_tail -%}
        {%- do due.append({'model': model, 'step': 'ledger', 'overdue': commits / max_tail}) -%}
    {%- endfor -%}
    {%- for model, segments in live.items() if _changelake_segments_to_merge(segments, segments_max_tail) -%}
        {%- set batches = segments | selectattr('kind', 'equalto', 'batch') | list | length -%}
        {%- do due.append({'model': model, 'step': 'segments', 'overdue': batches / segments_max_tail}) -%}
    {%- endfor -%}
    {#- Every table comes due once per `max_tail` runs, and in a project's first runs all of
        them in the same run: done at once, they made every `max_tail`-th run of the
        benchmark's age world 6-10 s (30-50%) slower than the others. A run does at most its
        share, the tables accruing (a ledger with commits in its tail, a table with consumed
        segments live) divided evenly over `max_tail` runs, and one more (the history's ledger
        takes two commits a run where it compacts every run), most overdue first: the first
        cycle spreads over the runs after it and the later ones stay spread. A step twice past
        due is done whatever the share, so no tail or segment count grows past 2x its limit. -#}
    {%- set tables = (state.tail.values() | select('gt', 0) | list | length)
        + (live.values() | select | list | length) -%}
    {%- set share = (tables / ([max_tail, segments_max_tail] | min)) | round(0, 'ceil') | int + 1 -%}
    {%- for step in due | sort(attribute='model') | sort(attribute='overdue', reverse=true) -%}
        {%- if loop.index > share and step.overdue < 2 -%}
        {%- elif step.step == 'ledger' -%}
            {%- do _changelake_compact_ledger(step.model) -%}
        {%- else -%}
            {%- do _changelake_merge_segments({step.model: live[step.model]}, segments_max_tail, live_names) -%}
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
{% macro _changelake_ledger_state(models, segmented) %}
    {%- set consumed_selects = [] -%}
    {%- for consumer in segmented.values() | unique -%}
        {%- do consumed_selects.append('select distinct ' ~ _changelake_literal(consumer) ~ ' as consumer, batch_id from '
            ~ changelake_ledger(consumer) ~ " where kind = 'consumed'") -%}
    {%- endfor -%}
    {%- set owner_selects = [] -%}
    {%- for model, consumer in segmented.items() -%}
        {%- do owner_selects.append('select ' ~ _changelake_literal(model) ~ ' as model, '
            ~ _changelake_literal(consumer) ~ ' as consumer') -%}
    {%- endfor -%}
    {%- set query -%}
        with

        ledger_rows as (
            {%- for model in models %}
            select
                {{ _changelake_literal(model) }} as model,
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
            {{ _changelake_union_all(consumed_selects,
                'select cast(null as string) as consumer, cast(null as string) as batch_id') }}
        ),

        owners as (
            {{ _changelake_union_all(owner_selects,
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
    {%- do run_query('insert into ' ~ ledger ~ ' partition (segment = ' ~ _changelake_literal(segment) ~ ')'
        ~ ' select /*+ coalesce(1) */ * from ' ~ changelake_ledger_rows(model_identifier) ~ ' as ledger_rows') -%}
    {%- set others = [] -%}
    {%- for spec in _changelake_partitions(ledger) if spec.segment != segment -%}
        {%- do others.append(spec) -%}
    {%- endfor -%}
    {%- do _changelake_drop_partitions(ledger, others) -%}
{% endmacro %}

{# purpose: the partitions of a partitioned table, each a dict of column -> value #}
{% macro _changelake_partitions(relation) %}
    {%- set specs = [] -%}
    {%- for row in run_query('show partitions ' ~ relation) -%}
        {%- set spec = {} -%}
        {%- for pair in row[0].split('/') -%}
            {%- set name_value = pair.split('=', 1) -%}
            {%- do spec.update({name_value[0]: name_value[1]}) -%}
        {%- endfor -%}
        {%- do specs.append(spec) -%}
    {%- endfor -%}
    {{ return(specs) }}
{% endmacro %}

{# purpose: drop the partitions `specs` (dicts of column -> value) of a table, in one statement #}
{% macro _changelake_drop_partitions(relation, specs) %}
    {%- set clauses = [] -%}
    {%- for spec in specs -%}
        {%- set values = [] -%}
        {%- for column, value in spec.items() -%}
            {%- do values.append(column ~ ' = ' ~ _changelake_literal(value)) -%}
        {%- endfor -%}
        {%- do clauses.append('partition (' ~ values | join(', ') ~ ')') -%}
    {%- endfor -%}
    {%- if clauses -%}
        {%- do run_query('alter table ' ~ relation ~ ' drop if exists ' ~ clauses | join(', ')) -%}
    {%- endif -%}
{% endmacro %}

{# purpose: what this invocation's start found in the ledgers (`_changelake_maintain_ledgers`); {} when it did not run #}
{% macro _changelake_run_start() %}
    {{ return(graph.get('changelake_run_start', {}).get(invocation_id, {})) }}
{% endmacro %}

{#
    purpose: remember that this model writes in this invocation (its materialization runs more
    than its hooks), so that what the run's start read of its ledger is asked again
#}
{% macro _changelake_note_written() %}
    {%- do graph.setdefault('changelake_written', {}).setdefault(invocation_id, []).append(this.identifier) -%}
{% endmacro %}

{# purpose: whether any of `models` (identifiers) writes or wrote in this invocation #}
{% macro _changelake_written_now(models) %}
    {%- set written = graph.get('changelake_written', {}).get(invocation_id, []) -%}
    {{ return(models | select('in', written) | list | length > 0) }}
{% endmacro %}

{# purpose: identifiers of every incremental model in the project (each has a ledger) #}
{% macro _changelake_incremental_models(prefix='') %}
    {%- set out = [] -%}
    {%- for node in graph.nodes.values() -%}
        {%- if node.resource_type == 'model' and node.config.materialized == 'incremental'
            and node.package_name == project_name and node.alias.startswith(prefix) -%}
            {%- do out.append(node.alias) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(out | sort) }}
{% endmacro %}

{#
    purpose: commit this run's batch of an incremental model, `rows` rows written (the caller
    counted them after writing), and remember it for the invocation
    (`_changelake_committed_now`); nothing is written when the batch holds no row: the ledger
    grows with batches, not with runs
#}
{% macro changelake_commit_rows(rows) %}
    {%- do _changelake_insert_ledger_rows([['batch', invocation_id, rows]] if rows > 0 else []) -%}
    {%- do _changelake_note_committed(rows) -%}
{% endmacro %}

{#
    purpose: append `ledger_rows` ([kind, batch_id, rows written] each) to this model's ledger
    tail in one single-file insert: all of them are recorded or none is; nothing when empty
#}
{% macro _changelake_insert_ledger_rows(ledger_rows) %}
    {%- set values = [] -%}
    {%- for kind, batch_id, rows in ledger_rows -%}
        {%- do values.append('(' ~ _changelake_literal(kind) ~ ', ' ~ _changelake_literal(batch_id) ~ ', ' ~ (rows | int) ~ 'L)') -%}
    {%- endfor -%}
    {%- if values -%}
        {%- do run_query('insert into ' ~ changelake_ledger(this.identifier) ~ ' ' ~ changelake_ledger_tail()
            ~ ' select /*+ coalesce(1) */ kind, batch_id, current_timestamp() as committed_at, rows_written'
            ~ ' from values ' ~ values | join(', ') ~ ' as ledger_rows (kind, batch_id, rows_written)') -%}
    {%- endif -%}
{% endmacro %}

{# purpose: remember that this model committed a batch of `rows` rows in this invocation (0: none) #}
{% macro _changelake_note_committed(rows) %}
    {%- do graph.setdefault('changelake_commits', {}).setdefault(invocation_id, {}).update(
        {this.identifier: rows | int}) -%}
{% endmacro %}

{#
    purpose: the batches `models` (identifiers) committed in this invocation, {model: {batch_id:
    rows}}, a model without one left out; none when one of them wrote in this invocation and
    did not say what it committed (`_changelake_note_committed`: the decoded models' and the
    change log's commits do; a full fold's base is not noted)
#}
{% macro _changelake_committed_now(models) %}
    {%- set written = graph.get('changelake_written', {}).get(invocation_id, []) -%}
    {%- set commits = graph.get('changelake_commits', {}).get(invocation_id, {}) -%}
    {%- set out = {} -%}
    {%- for model in models if model in written -%}
        {%- if model not in commits -%}
            {{ return(none) }}
        {%- endif -%}
        {%- if commits[model] > 0 -%}
            {%- do out.update({model: {invocation_id: commits[model]}}) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(out) }}
{% endmacro %}
