{#- Generic tests for SCD-2 history tables (dbt_utils is not installable here). Each returns
    the rows that break its rules. `partition_by` names the columns identifying one source row. -#}

{#-
    purpose: the SCD-2 rules of a history table, in one pass over its versions (one exchange by
    key, where a test per rule reads and exchanges the versions once each): at most one current
    version per key; consecutive versions do not overlap (each closes where, or before, the next
    opens); a closed version ends after it starts (by source position, then by time); every
    version has a valid_from. One row per version breaking a rule, `broken_rules` naming each.
-#}
{% test scd2_rules(model, partition_by) %}
    with versions as (
        select
            {{ partition_by | join(', ') }},
            version_number,
            valid_from,
            valid_to,
            valid_from_position,
            valid_to_position,
            is_current,
            count_if(is_current) over (partition by {{ partition_by | join(', ') }}) as current_versions,
            lead(valid_from_position) over (
                partition by {{ partition_by | join(', ') }} order by version_number
            ) as next_valid_from_position
        from {{ model }}
    ),

    checked as (
        select
            *,
            filter(
                array(
                    case when is_current and current_versions > 1
                        then 'another version of the key is current too' end,
                    case when next_valid_from_position is not null
                        and (valid_to_position is null or valid_to_position > next_valid_from_position)
                        then 'overlaps the next version' end,
                    case when valid_to_position is not null
                        and (valid_to_position < valid_from_position or valid_to < valid_from)
                        then 'closes before it opens' end,
                    case when valid_from is null then 'valid_from is null' end
                ),
                rule -> rule is not null
            ) as broken_rules
        from versions
    )

    select * from checked
    where size(broken_rules) > 0
{% endtest %}

{#-
    purpose: the current table holds exactly the history's open versions: their keys
    (`partition_by`) and `columns`. Each side is named twice (two differences) and read once
    (`changelake_computed_once`): read twice, the two scans of the current table were most of
    the test's time.
-#}
{% test equals_open_versions(model, history, partition_by, columns=['opening_change_id']) %}
    {%- set compared = [] -%}
    {%- for column in partition_by + columns -%}
        {%- do compared.append(changelake_quoted(column)) -%}
    {%- endfor -%}
    with open_versions as (
        select {{ compared | join(', ') }}
        -- the same scope as the model: the test's where, and a build's unchanged-store rule
        from {{ get_where_subquery(history) }}
        where is_current
            and {{ changelake_computed_once() }}
    ),

    current_rows as (
        select {{ compared | join(', ') }}
        from {{ model }}
        where {{ changelake_computed_once() }}
    )

    (select * from open_versions except select * from current_rows)
    union all
    (select * from current_rows except select * from open_versions)
{% endtest %}
