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
    reach the fold as the model's `meta`, changelake_typed_models), so it reads one row a key.
#}
{% macro changelake_typed_history(feed, source_table, columns, key, tracked=none) %}
    {%- set tracked_columns = tracked if tracked is not none else columns.keys() | list -%}
    {%- for column in key + tracked_columns if column not in columns -%}
        {{ exceptions.raise_compiler_error(
            "typed history of " ~ source_table ~ ": column '" ~ column
            ~ "' is a key or tracked column but has no type in `columns`") }}
    {%- endfor %}
    {#- what the history store's fold and the typed current model read (changelake_typed_models) -#}
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
            {{ changelake_literal('struct<' ~ changelake_struct_fields(columns) ~ '>') }}
        ) as image
    from {{ ref('cdc_history') }}
    where {{ changelake_typed_table(feed, source_table) }}
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
                    image.{{ changelake_quoted(column) }} <=> lag(image.{{ changelake_quoted(column) }}) over (
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
        {{ changelake_typed_value('image.' ~ changelake_quoted(column), type) }} as {{ changelake_quoted(column) }},
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

{# purpose: "`a`: string, `b`: string" for the columns (the schema of the row image) #}
{% macro changelake_struct_fields(columns) %}
    {%- set fields = [] -%}
    {%- for column in columns -%}
        {%- do fields.append(changelake_quoted(column) ~ ': string') -%}
    {%- endfor -%}
    {{- return(fields | join(', ')) -}}
{% endmacro %}

{# purpose: one canonical JSON text value as its configured Spark type #}
{% macro changelake_typed_value(expression, type) %}
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
