{#- Generic tests for SCD-2 history tables (dbt_utils is not installable here). Each returns
    the rows that break the rule. `partition_by` names the columns identifying one source row. -#}

{#- purpose: at most one current version per key -#}
{% test at_most_one_current_version(model, partition_by) %}
    select
        {{ partition_by | join(', ') }},
        count(*) as current_versions
    from {{ model }}
    where is_current
    group by {{ partition_by | join(', ') }}
    having count(*) > 1
{% endtest %}

{#- purpose: consecutive versions of a key do not overlap: each closes where (or before) the next opens -#}
{% test no_overlapping_versions(model, partition_by) %}
    with ordered as (
        select
            *,
            lead(valid_from_position) over (
                partition by {{ partition_by | join(', ') }} order by version_number
            ) as next_valid_from_position
        from {{ model }}
    )

    select * from ordered
    where next_valid_from_position is not null
        and (valid_to_position is null or valid_to_position > next_valid_from_position)
{% endtest %}

{#- purpose: a closed version ends after it starts (by source position; equal positions order by offset) -#}
{% test valid_from_before_valid_to(model) %}
    select * from {{ model }}
    where valid_to_position is not null
        and (valid_to_position < valid_from_position or (valid_to is not null and valid_to < valid_from))
{% endtest %}

{#- purpose: the current table holds exactly the history's open versions -#}
{% test equals_open_versions(model, history, partition_by) %}
    with open_versions as (
        select {{ partition_by | join(', ') }}, opening_change_id
        -- the same scope as the model: the test's where, and a build's unchanged-store rule
        from {{ get_where_subquery(history) }}
        where is_current
    ),

    current_rows as (
        select {{ partition_by | join(', ') }}, opening_change_id
        from {{ model }}
    )

    (select * from open_versions except select * from current_rows)
    union all
    (select * from current_rows except select * from open_versions)
{% endtest %}
