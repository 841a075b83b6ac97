{# purpose: the columns identifying one source table #}
{% macro changelake_table_id() %}
    {{ return(['feed', 'source_name', 'database_name', 'schema_name', 'table_name']) }}
{% endmacro %}

{# purpose: SQL join condition: `left` and `right` are the same source table (and key, with `key`) #}
{% macro changelake_same_table(left, right, key=false) %}
    {%- set parts = [] -%}
    {%- for column in changelake_table_id() -%}
        {%- do parts.append(left ~ '.' ~ column ~ ' <=> ' ~ right ~ '.' ~ column) -%}
    {%- endfor -%}
    {%- if key -%}
        {%- do parts.append(left ~ '.key_json = ' ~ right ~ '.key_json') -%}
    {%- endif -%}
    {{ return(parts | join(' and ')) }}
{% endmacro %}
