{# purpose: upstream batches (of the incremental models named `prefix`*) committed but not yet
   consumed by this model, at compile time: batch id -> rows the batch wrote #}
{% macro changelake_pending_batches(prefix='decoded_') %}
    {{ return(changelake_batches_of_all(changelake_pending_batches_by_model(prefix))) }}
{% endmacro %}

{#
    purpose: {batch_id: rows} over every model of `by_model` ({model: {batch_id: rows}}): the
    models built in one invocation share its batch id, so their rows add up
#}
{% macro changelake_batches_of_all(by_model) %}
    {%- set batches = {} -%}
    {%- for model_batches in by_model.values() -%}
        {%- for batch_id, rows in model_batches.items() -%}
            {%- do batches.update({batch_id: batches.get(batch_id, 0) + rows}) -%}
        {%- endfor -%}
    {%- endfor -%}
    {{ return(batches) }}
{% endmacro %}

{#
    purpose: the pending batches of each incremental model named `prefix`*, {model: {batch_id:
    rows written}}: a model with none is left out (its feed landed nothing new). Read once per
    model and invocation (its body, then its commit: nothing writes those ledgers in between),
    and not at all when each of those models that wrote in this invocation said what it
    committed (`changelake_committed_now`, macros/run_state.sql): then they are what the run's
    start found (`changelake_run_start`) and those commits.
#}
{% macro changelake_pending_batches_by_model(prefix='decoded_') %}
    {%- if not execute -%}
        {{ return({}) }}
    {%- endif -%}
    {%- set upstream = changelake_incremental_models(prefix) -%}
    {%- set at_start = changelake_run_start().get('pending', {}).get(this.identifier) -%}
    {%- set committed_now = changelake_committed_now(upstream) -%}
    {%- if at_start is not none and committed_now is not none -%}
        {%- set pending = {} -%}
        {%- for model, batches in at_start.items() if model in upstream and batches -%}
            {%- do pending.update({model: batches.copy()}) -%}
        {%- endfor -%}
        {%- for model, batches in committed_now.items() -%}
            {%- do pending.setdefault(model, {}).update(batches) -%}
        {%- endfor -%}
        {{ return(pending) }}
    {%- endif -%}
    {%- set memo = changelake_pending_memo() -%}
    {%- set memo_key = this.identifier ~ '/' ~ prefix -%}
    {%- if memo_key in memo -%}
        {{ return(memo[memo_key]) }}
    {%- endif -%}
    {%- set query -%}
        select committed.model, committed.batch_id, sum(committed.rows_written) as rows_written
        from (
            {%- for model in changelake_incremental_models(prefix) %}
            select {{ changelake_literal(model) }} as model, batch_id, rows_written
            from {{ changelake_ledger_rows(model) }} as ledger where kind = 'batch'
            {%- if not loop.last %} union all{% endif %}
            {%- endfor %}
        ) as committed
        left anti join {{ changelake_ledger(this.identifier) }} as consumed
            on committed.batch_id = consumed.batch_id and consumed.kind = 'consumed'
        group by committed.model, committed.batch_id
    {%- endset -%}
    {%- set pending = {} -%}
    {%- for row in run_query(query) -%}
        {%- do pending.setdefault(row[0], {}).update({row[1]: row[2]}) -%}
    {%- endfor -%}
    {%- do memo.update({memo_key: pending}) -%}
    {{ return(pending) }}
{% endmacro %}

{#
    purpose: post-hook committing a change-log batch together with the decoded batches it
    consumed, in one single-file insert: either both are recorded or neither is. The batch's
    rows are counted first; a batch (not a full fold's base) is remembered for the invocation
    (`changelake_note_committed`), so the history reads no ledger to find it, and a change-log
    batch with the truncates the same count found (`changelake_note_truncates`), so the
    history's plan needs no query to know them.
#}
{% macro changelake_commit_consuming_batch(prefix='decoded_') %}
    {%- if not execute or changelake_batch_is_empty() -%}
        {{ return('') }}
    {%- endif -%}
    {%- set consumed = changelake_pending_batches(prefix) -%}
    {#- the history store's full fold is complete: a base layer (macros/history/) -#}
    {%- set kind = 'base' if changelake_is_full_fold() else 'batch' -%}
    {#- the change log also counts its truncates, for the history's plan (changelake_history_plan) -#}
    {%- set counted = run_query('select count(*)' ~ (", count_if(kind = 'truncate')" if prefix == 'decoded_' else '')
        ~ ' from ' ~ this ~ ' where '
        ~ (changelake_pending_rows([invocation_id]) if this.identifier in changelake_segmented_models()
            else "batch_id = '" ~ invocation_id ~ "'")).rows[0] -%}
    {%- set rows = counted[0] | int -%}
    {#- a run that wrote and consumed nothing commits nothing -#}
    {%- set ledger_rows = [[kind, invocation_id, rows]] if rows > 0 else [] -%}
    {%- for batch_id in consumed -%}
        {%- do ledger_rows.append(['consumed', batch_id, 0]) -%}
    {%- endfor -%}
    {%- do changelake_insert_ledger_rows(ledger_rows) -%}
    {%- if kind == 'batch' -%}
        {%- do changelake_note_committed(rows) -%}
        {%- if prefix == 'decoded_' -%}
            {%- do changelake_note_truncates(counted[1]) -%}
        {%- endif -%}
    {%- endif -%}
    {{ return('') }}
{% endmacro %}
