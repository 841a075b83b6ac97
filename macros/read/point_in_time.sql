{#
    Point-in-time reads of any SCD-2 history: `cdc_history` or a typed history model.

        -- the rows in force at a time (any SQL timestamp expression)
        {{ changelake_as_of(ref('cdc_history'), "timestamp'2026-01-05 09:00:00'") }}
        -- ... or at a source log position (compare positions of one source only)
        {{ changelake_as_of(ref('typed_pg_customers_history'), "'000000000000000123'", by='position') }}
        -- what changed between two points: one row per key whose version in force differs
        {{ changelake_changes_between(ref('cdc_history'), "timestamp'2026-01-05'", "current_timestamp()") }}

    Usable in a model, in `dbt show --inline`, or compiled (`dbt compile --inline`) for a BI
    tool. A version is in force at t when valid_from <= t < valid_to (valid_to null: still
    open); a deleted key has no row in force after its delete.
#}

{# purpose: SQL of the versions of `history` in force at `at` (by 'time' or 'position') #}
{% macro changelake_as_of(history, at, by='time') %}
    {%- set bounds = _changelake_validity_bounds(by) -%}
    select *
    from {{ history }}
    where
        {{ bounds[0] }} <= {{ at }}
        and ({{ bounds[1] }} > {{ at }} or {{ bounds[1] }} is null)
{% endmacro %}

{#
    purpose: SQL of the net change of `history` between `start` and `end` (by 'time' or
    'position'): one row per key whose version in force differs, with change_type 'inserted'
    (none in force at start), 'deleted' (none at end) or 'updated', and both versions as
    structs (`before_version`, `after_version`, null where none). Keys whose version came back
    to the one in force at start are not listed; cdc_change_log has every change in between.
    `key` defaults to cdc_history's key columns, or key_json for a typed history.
#}
{% macro changelake_changes_between(history, start, end, by='time', key=none) %}
    {%- set key_columns = key if key is not none else (
        ['feed', 'source_name', 'database_name', 'schema_name', 'table_name', 'key_json']
        if (history | string).split('.')[-1].strip('`') == 'cdc_history' else ['key_json']) -%}
    select
        {%- for column in key_columns %}
        coalesce(after_state.{{ changelake_quoted(column) }}, before_state.{{ changelake_quoted(column) }})
            as {{ changelake_quoted(column) }},
        {%- endfor %}
        case
            when before_state.opening_change_id is null then 'inserted'
            when after_state.opening_change_id is null then 'deleted'
            else 'updated'
        end as change_type,
        case when before_state.opening_change_id is not null then struct(before_state.*) end as before_version,
        case when after_state.opening_change_id is not null then struct(after_state.*) end as after_version
    from ({{ changelake_as_of(history, start, by) }}) as before_state
    full outer join ({{ changelake_as_of(history, end, by) }}) as after_state
        on
        {%- for column in key_columns %}
            before_state.{{ changelake_quoted(column) }} <=> after_state.{{ changelake_quoted(column) }}
            {{- " and" if not loop.last }}
        {%- endfor %}
    where not (before_state.opening_change_id <=> after_state.opening_change_id)
{% endmacro %}

{# purpose: the columns bounding a version, by time or by source log position #}
{% macro _changelake_validity_bounds(by) %}
    {%- if by == 'time' -%}
        {{ return(['valid_from', 'valid_to']) }}
    {%- elif by == 'position' -%}
        {{ return(['valid_from_position', 'valid_to_position']) }}
    {%- endif -%}
    {{ exceptions.raise_compiler_error("point-in-time reads go by 'time' or 'position' (got '" ~ by ~ "')") }}
{% endmacro %}
