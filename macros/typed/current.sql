{#
    purpose: the open versions of a typed history model: one row per live key, as its typed
    history's open versions give them (a tracked version's first change's values, opening and
    start). Read from the history store's frontier, which keeps for each key the start of its
    last version's run of equal tracked values (`islands`, python_udfs/scd2.py): one row a key,
    however many versions the key has had, where the typed history reads every version of the
    table. While a live key's frontier row has no start for this model's tracked columns (the
    model, or its `tracked`, is newer than the key's last change), the model reads its typed
    history instead, and says so. The next run of the history store that has new changes to
    fold re-folds every key of such a table (changelake_typed_stale_tables), storing the
    starts; so does `changelake dbt build --full-refresh --select int_history_versions+`.
#}
{% macro changelake_typed_current(history) %}
    {%- set store = ref('int_history_versions') -%}
    {%- set model = (changelake_typed_models() | selectattr('alias', 'equalto', history.identifier) | list or [none])[0] -%}
    {%- if model is none -%}
        {{ return(_changelake_typed_current_of(history)) }}
    {%- endif -%}
    {%- set open_rows -%}
        select key_json, {{ changelake_typed_start(model) }} as island
        from ({{ changelake_history_frontier(store, published=true) }}) as frontier
        where is_current and {{ changelake_typed_table(model.feed, model.source_table) }}
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
        {{ changelake_typed_value('image.' ~ changelake_quoted(column), type) }} as {{ changelake_quoted(column) }},
        {% endfor -%}
        island.valid_from_position,
        island.valid_from
    from (
        select
            *,
            from_json(
                island.row_json,
                {{ changelake_literal('struct<' ~ changelake_struct_fields(model.columns) ~ '>') }}
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
        and changelake_view_text_is(existing, from_frontier) -%}
        {{ return(from_frontier) }}
    {%- endif -%}
    {#- The store's property says every live key has the starts of the project's typed models
        (changelake_typed_stale_tables): no count is needed either. -#}
    {%- if changelake_stored_typed_specs(store) == changelake_typed_specs(changelake_typed_models()) -%}
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
