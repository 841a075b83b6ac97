{#
    purpose: CTEs `frontier` (the live frontier of this model), `touched_frontier` (its rows of
    the touched keys; with `key_scan`, read for those keys alone, see
    changelake_history_plan) and `classified`: every key the
    pending events or truncates touch, with its frontier row as `state`, and `is_late` when one
    of its new events is at or before a position already seen for the key or its table's
    truncates (it is then re-folded from all its changes). `named`: the store's live layers
    (from changelake_read_layers), named in the reads of the store. `refold_tables` (from
    changelake_typed_stale_tables): tables every live key of which is touched and late.
#}
{% macro changelake_history_classified(pending_events, pending_truncates, key_scan=false, named=none, refold_tables=[]) %}
    {%- set table_id = changelake_table_id() -%}
    {%- set key = table_id + ['key_json'] -%}
frontier as (
    {{ changelake_history_frontier(this, this.identifier, named=named) }}
),

old_truncates as (
    select
        {{ table_id | join(', ') }},
        max(last_position) as last_truncate_position
    from ({{ changelake_live_rows(this, this.identifier, ['truncate'], named=named) }}) as stored
    group by {{ table_id | join(', ') }}
),

first_truncates as (
    select
        {{ table_id | join(', ') }},
        min(coalesce(position, '')) as first_position
    from {{ pending_truncates }}
    group by {{ table_id | join(', ') }}
),

touched as (
    select
        {{ key | join(', ') }},
        min(coalesce(position, '')) as first_position
    from {{ pending_events }}
    group by {{ key | join(', ') }}
    union all
    -- a new truncate touches every key of its table
    select
        {% for column in key %}frontier.{{ column }}, {% endfor %}
        first_truncates.first_position
    from frontier
    inner join first_truncates on {{ changelake_same_table('frontier', 'first_truncates') }}
    {%- if refold_tables %}
    union all
    -- every live key of a table whose typed models' starts it lacks: re-folded (a first
    -- position before any, so late)
    select {{ key | join(', ') }}, '' as first_position
    from frontier
    where is_current and (
        {%- for table in refold_tables %}
        ({{ changelake_typed_table(table.feed, table.source_table) }}){{ ' or' if not loop.last }}
        {%- endfor %}
    )
    {%- endif %}
),

touched_keys as (
    select
        {% for column in key %}touched.{{ column }}, {% endfor %}
        least(min(touched.first_position), min(first_truncates.first_position)) as first_position
    from touched
    left join first_truncates on {{ changelake_same_table('touched', 'first_truncates') }}
    group by {% for column in key %}touched.{{ column }}{{ ", " if not loop.last }}{% endfor %}
),

-- the touched keys' frontier rows{{ ': read for those keys alone' if key_scan else '' }}
touched_frontier as (
    {{ changelake_history_frontier(this, this.identifier, keys='touched_keys' if key_scan else none, named=named) }}
),

-- named by the resumed events, the fold's inputs and the re-folded keys: computed once
classified as (
    select
        {% for column in key %}touched_keys.{{ column }}, {% endfor %}
        case when frontier.key_json is not null then named_struct(
            {%- for column in changelake_version_columns() %}
            '{{ column }}', frontier.{{ column }}{{ "," if not loop.last }}
            {%- endfor %}
        ) end as state,
        frontier.last_position as state_last_position,
        coalesce(touched_keys.first_position <= frontier.last_position, false)
        or coalesce(touched_keys.first_position <= old_truncates.last_truncate_position, false)
            as is_late
    from touched_keys
    left join touched_frontier as frontier
        on {{ changelake_same_table('touched_keys', 'frontier', key=true) }}
    left join old_truncates on {{ changelake_same_table('touched_keys', 'old_truncates') }}
    where {{ changelake_computed_once() }}
),
{% endmacro %}

{#
    purpose: how the run reads, decided at compile time: {'key_scan': whether it may read the
    frontier for the keys it touches alone, 'any_late': whether any key of the pending
    change-log batches may need a re-fold from all its changes (when none does, the run does
    not read the change log's past at all), 'any_truncate': whether the pending batches hold a
    truncate (when none does, the run does not read the whole frontier), 'late_at_run' (when
    present and true): whether the late keys are left to the run's query to find}.
    With `key_scan`, the touched keys are broadcast to the frontier's scan (a hint), which drops
    the other rows where they are read instead of exchanging every row to join them. A
    broadcast is held whole in the driver's and every executor's memory, so only when the keys
    are known to be few: the pending batches hold at most `max_rows` rows (a var overrides it)
    and no truncate (a truncate touches every key of its table). Otherwise the frontier is
    joined as a whole, which scales with any number of keys.
    No query when the change log committed every pending batch in this invocation, its commit
    counting no truncate in them (the normal run), and their rows are few: then 'key_scan' and
    'late_at_run': the run's query holds the re-fold, over the change log's past, for its
    late keys broadcast; when they are none, Spark's adaptive execution finds the broadcast
    empty and drops the re-fold before it reads anything (tests/python/test_history.py checks
    the scans as they ran). That query's late keys cost no more than this plan's count of them
    did, a second pass over the pending changes and the frontier.
    Otherwise one query answers both when the keys may be few: the pending truncates and the
    late keys of the pending row changes (a truncate's keys left out: with a truncate, the late
    keys are counted again, by a whole-frontier join). `named`: the store's live layers, as the
    run reads them (changelake_read_layers).
#}
{% macro changelake_history_plan(changes_model, pending, named, max_rows=1000000) %}
    {%- if not execute -%}
        {{ return({'key_scan': true, 'any_late': true, 'any_truncate': true}) }}
    {%- endif -%}
    {%- set max_rows = var('changelake_history_key_scan_rows', max_rows) -%}
    {#- the truncates of each pending batch the change log committed in this invocation, as its
        commit counted them (changelake_commit_consuming_batch) -#}
    {%- set noted = changelake_truncates_now() -%}
    {%- set truncates = [] -%}
    {%- for batch_id in pending if (changes_model ~ '/' ~ batch_id) in noted -%}
        {%- do truncates.append(noted[changes_model ~ '/' ~ batch_id]) -%}
    {%- endfor -%}
    {%- if (pending.values() | sum) <= max_rows and pending and truncates | length == pending | length
        and truncates | sum == 0 -%}
        {#- no truncate, keys few enough to broadcast: no query; the late keys are found by
            the run's own query -#}
        {{ return({'key_scan': true, 'any_late': true, 'any_truncate': false, 'late_at_run': true}) }}
    {%- endif -%}
    {%- if (pending.values() | sum) <= max_rows -%}
        {%- set row = run_query(_changelake_history_late_query(changes_model, pending, named, key_scan=true)).rows[0] -%}
        {%- if row[1] == 0 -%}
            {{ return({'key_scan': true, 'any_late': row[0] > 0, 'any_truncate': false}) }}
        {%- endif -%}
    {%- endif -%}
    {%- set row = run_query(_changelake_history_late_query(changes_model, pending, named, key_scan=false)).rows[0] -%}
    {{ return({'key_scan': false, 'any_late': row[0] > 0, 'any_truncate': row[1] > 0}) }}
{% endmacro %}

{#
    purpose: the query behind changelake_history_plan: one row, the pending batches' late keys
    and their truncates. With `key_scan`, their truncates are left out of the late keys (their
    keys, every key of a table, are not broadcast).
#}
{% macro _changelake_history_late_query(changes_model, pending, named, key_scan) %}
    with

    -- pending batches are committed ones, each in its own live segment: named, they need no
    -- other filter
    changes as (
        select * from {{ ref(changes_model) }} as logged
        where {{ changelake_pending_rows(pending, 'logged') }}
    ),

    new_events as (
        {{ changelake_row_events('changes') }}
    ),

    new_truncates as (
        select * from ({{ changelake_truncate_events('changes') }}) as truncates
        {%- if key_scan %}
        where false
        {%- endif %}
    ),

    {{ changelake_history_classified('new_events', 'new_truncates', key_scan, named) }}

    late as (
        select count_if(is_late) as late_keys from classified
    ),

    truncates as (
        select count_if(kind = 'truncate') as pending_truncates from changes
    )

    select late.late_keys, truncates.pending_truncates
    from late
    cross join truncates
{% endmacro %}
