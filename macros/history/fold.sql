{#
    purpose: SQL (a select) of row changes as fold events: every keyed row change, and for an
    update that changed the key, a close of the old key into the new one.
#}
{% macro changelake_row_events(changes) %}
    select
        {{ changelake_table_id() | join(', ') }},
        key_json,
        change_id,
        op,
        position,
        kafka_partition,
        kafka_offset,
        row_index,
        {{ changelake_version_time() }} as committed_at,
        after_json,
        unavailable_columns,
        linked_key_json
    from {{ changes }}
    where kind = 'row' and key_json is not null
    union all
    -- an update that changed the primary key also closes the old key, into the new one
    select
        {{ changelake_table_id() | join(', ') }},
        linked_key_json as key_json,
        change_id,
        'd' as op,
        position,
        kafka_partition,
        kafka_offset,
        row_index,
        {{ changelake_version_time() }} as committed_at,
        cast(null as string) as after_json,
        cast(null as array<string>) as unavailable_columns,
        key_json as linked_key_json
    from {{ changes }}
    where kind = 'row' and op = 'u' and linked_key_json is not null and key_json is not null
{% endmacro %}

{# purpose: SQL (a select) of the truncates among `changes`, as fold events without a key #}
{% macro changelake_truncate_events(changes) %}
    select
        {{ changelake_table_id() | join(', ') }},
        change_id,
        't' as op,
        position,
        kafka_partition,
        kafka_offset,
        row_index,
        {{ changelake_version_time() }} as committed_at,
        cast(null as string) as after_json,
        cast(null as array<string>) as unavailable_columns,
        cast(null as string) as linked_key_json
    from {{ changes }}
    where kind = 'truncate'
{% endmacro %}

{# purpose: the struct of one fold event, as the changelake_versions UDF takes it #}
{% macro _changelake_fold_event(alias) %}
    struct(
        {{ alias }}.change_id, {{ alias }}.op, {{ alias }}.position, {{ alias }}.kafka_partition,
        {{ alias }}.kafka_offset, {{ alias }}.row_index, {{ alias }}.committed_at,
        {{ alias }}.after_json, {{ alias }}.unavailable_columns, {{ alias }}.linked_key_json
    )
{% endmacro %}

{#
    purpose: the body of the history store model: for the keys that newly committed change-log
    batches touch, the versions that change and each key's new frontier row (the store's parts:
    the top of macros/history/layers.sql).
#}
{% macro changelake_versions_model(changes_model) %}
    {%- set incremental = is_incremental() -%}
    {%- set pending = changelake_pending_batches(changes_model) if execute and incremental else [] -%}
    {%- set table_id = changelake_table_id() -%}
    {%- set key = table_id + ['key_json'] -%}
    {%- if incremental and not pending -%}
        {#- nothing new: write nothing, read nothing, commit nothing (noted for the hooks) -#}
        {{ return(changelake_note_nothing_new() ~ 'select * from ' ~ this ~ ' where false') }}
    {%- endif -%}
    {#- the store's live layers, read once: the plan query and the insert name them -#}
    {%- set named = changelake_read_layers(this.identifier) if execute and incremental else none -%}
    {%- set plan = changelake_history_plan(changes_model, pending, named) if incremental else {'key_scan': false, 'any_late': true} -%}
    {%- set key_scan, any_late, any_truncate = plan['key_scan'], plan['any_late'], plan.get('any_truncate', true) -%}
    {#- late keys not counted before the run: the re-fold is in the query, on the late keys
        broadcast, and Spark drops it, unread, when they turn out to be none -#}
    {%- set late_at_run = plan.get('late_at_run', false) -%}
    {#- typed tables whose keys lack a typed model's start (macros/typed/): every key of them
        re-folded, so the frontier is joined whole -#}
    {%- set refold_tables = changelake_typed_stale_tables(this, named) if execute and incremental else [] -%}
    {%- if refold_tables -%}
        {%- set key_scan, any_late, late_at_run = false, true, false -%}
    {%- endif -%}
    {%- set refold_hint = '/*+ broadcast(refold_keys) */' if late_at_run else '' -%}
{{ changelake_note_full_fold() if not incremental else '' }}
with

changes as (
    select * from {{ ref(changes_model) }} as logged
    where {{ changelake_committed_in_run('logged', changes_model, pending | list if incremental else none) }}
),

new_changes as (
    {%- if incremental %}
    -- the pending batches, found by literals (committed, since pending); named three times
    -- below: read once
    select * from {{ ref(changes_model) }} as logged
    where {{ changelake_pending_rows(pending, 'logged') }}
        and {{ changelake_computed_once() }}
    {%- else %}
    select * from changes
    {%- endif %}
),

new_events as (
    {{ changelake_row_events('new_changes') }}
),

new_truncates as (
    {%- if any_truncate %}
    {{ changelake_truncate_events('new_changes') }}
    {%- else %}
    -- the plan found no truncate in the pending batches: none, known when Spark plans the
    -- insert, so it drops every branch fed by truncates (a new truncate touches every key of
    -- its table: those branches read the whole frontier)
    select * from ({{ changelake_truncate_events('new_changes') }}) as truncates
    where false
    {%- endif %}
),
{%- if incremental %}

{{ changelake_history_classified(pending_events='new_events', pending_truncates='new_truncates', key_scan=key_scan, named=named, refold_tables=refold_tables) }}

-- keys whose new changes all come after what was seen: the new changes, from the frontier
resumed_events as (
    select
        {% for column in key %}classified.{{ column }}, {% endfor %}
        {{ _changelake_fold_event('new_events') }} as event
    from classified
    inner join new_events on {{ changelake_same_table('classified', 'new_events', key=true) }}
    where not classified.is_late
    union all
    select
        {% for column in key %}classified.{{ column }}, {% endfor %}
        {{ _changelake_fold_event('new_truncates') }} as event
    from classified
    inner join new_truncates on {{ changelake_same_table('classified', 'new_truncates') }}
    where not classified.is_late
),
{%- endif %}
{%- if any_late %}

-- keys folded from all their changes: every key in a full build, late keys in a run
refold_keys as (
    {%- if incremental %}
    select {{ key | join(', ') }} from classified where is_late
    {%- else %}
    select distinct {{ key | join(', ') }} from ({{ changelake_row_events('changes') }}) as all_events
    {%- endif %}
),

all_truncates as (
    {{ changelake_truncate_events('changes') }}
),

refold_events as (
    select {{ refold_hint }}
        {% for column in key %}all_events.{{ column }}, {% endfor %}
        {{ _changelake_fold_event('all_events') }} as event
    from ({{ changelake_row_events('changes') }}) as all_events
    left semi join refold_keys on {{ changelake_same_table('all_events', 'refold_keys', key=true) }}
    union all
    select {{ refold_hint }}
        {% for column in key %}refold_keys.{{ column }}, {% endfor %}
        {{ _changelake_fold_event('all_truncates') }} as event
    from refold_keys
    inner join all_truncates on {{ changelake_same_table('refold_keys', 'all_truncates') }}
),
{%- endif %}

fold_inputs as (
    {%- if incremental %}
    select
        {% for column in key %}classified.{{ column }}, {% endfor %}
        classified.is_late,
        classified.state,
        classified.state_last_position,
        events.event
    from classified
    left join (
        select * from resumed_events
        {%- if any_late %}
        union all
        select * from refold_events
        {%- endif %}
    ) as events on {{ changelake_same_table('classified', 'events', key=true) }}
    {%- else %}
    select
        {% for column in key %}refold_events.{{ column }}, {% endfor %}
        true as is_late,
        cast(null as {{ changelake_state_type() }}) as state,
        cast(null as string) as state_last_position,
        refold_events.event
    from refold_events
    {%- endif %}
),

folded as (
    select
        {{ key | join(', ') }},
        is_late,
        changelake_versions(
            collect_list(event), if(is_late, null, first(state, true)), {{ changelake_typed_tracked() }}
        ) as versions,
        first(state, true) as state,
        -- the last source position seen for the key (positions order one source's log)
        greatest(max(coalesce(event.position, '')), max(coalesce(state_last_position, ''))) as last_position
    from fold_inputs
    group by {{ key | join(', ') }}, is_late
),

{%- set version_columns = changelake_version_columns() %}

-- each folded key's rows of the layer, from one pass over `folded`: its closed versions, its
-- frontier row and, where re-folded in a run, its superseded marker (one generate, so the fold
-- and everything under it is planned once, not once per part)
layer_rows as (
    select
        {% for column in key %}keyed.{{ column }},
        {% endfor -%}
        layer_row.*
    from (
        select
            *,
            -- the key's last version: the fold's, else (nothing opened) the one it resumed from
            coalesce(try_element_at(versions, -1), if(is_late, null, state)) as last_version
        from folded
    ) as keyed
    lateral view explode(concat(
        transform(
            filter(versions, version -> not version.is_current),
            version -> named_struct(
                {%- for column in version_columns %}
                '{{ column }}', version.{{ column }},
                {%- endfor %}
                'last_position', cast(null as string),
                'part', 'closed'
            )
        ),
        array(named_struct(
            {%- for column in version_columns %}
            '{{ column }}', keyed.last_version.{{ column }},
            {%- endfor %}
            'last_position', keyed.last_position,
            'part', if(keyed.last_version.is_current, 'frontier', 'ended')
        )),
        filter(
            array(named_struct(
                {%- for column in version_columns %}
                '{{ column }}', cast(null as {{ changelake_version_type(column) }}),
                {%- endfor %}
                'last_position', cast(null as string),
                'part', 'superseded'
            )),
            -- a key re-folded in a run voids its closed rows in older layers
            superseded -> {{ 'keyed.is_late' if incremental else 'false' }}
        )
    )) as layer_row
),

layer_truncates as (
    select
        {% for column in table_id %}{{ column }},
        {% endfor -%}
        cast(null as string) as key_json,
        {%- for column in version_columns %}
        cast(null as {{ changelake_version_type(column) }}) as {{ column }},
        {%- endfor %}
        position as last_position,
        'truncate' as part
    from new_truncates
),

{%- set columns = key + changelake_version_columns() + ['last_position'] %}

-- the batch id in each branch of the union, so that the layer's key order is the write's
-- (changelake_layer_order)
final as (
    select {{ columns | join(', ') }}, '{{ invocation_id }}' as batch_id, part from layer_rows
    union all
    select {{ columns | join(', ') }}, '{{ invocation_id }}' as batch_id, part from layer_truncates
)

select {{ changelake_layer_rebalance() }}
    {{ columns | join(',\n    ') }},
    -- parsed here, once (changelake_parsed_columns)
    parse_json(key_json) as key,
    parse_json(row_json) as row,
    batch_id,
    part
from final
{{ changelake_layer_order() }}
{% endmacro %}
