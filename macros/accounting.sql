{#
    purpose: SQL counting the landed records (non-empty lines of landed files) of every feed of
    the `landing` source, one row per feed; an empty relation when there are none.
#}
{% macro changelake_landed_records() %}
    {%- set selects = [] -%}
    {%- for node in _changelake_landing_nodes() -%}
        {%- set select -%}
            select
                {{ _changelake_literal(node.name) }} as feed,
                count(*) as records_landed
            from {{ node.schema }}.{{ node.identifier }}
            lateral view explode(split(value, '\n')) lines as line
            where rtrim('\r', lines.line) != ''
        {%- endset -%}
        {%- do selects.append(select) -%}
    {%- endfor -%}
    {{ return(_changelake_union_per_feed(selects, 'select cast(null as string) as feed, 0 as records_landed')) }}
{% endmacro %}
