{# purpose: identifiers of every incremental model in the project (each has a ledger) #}
{% macro changelake_incremental_models(prefix='') %}
    {%- set out = [] -%}
    {%- for node in graph.nodes.values() -%}
        {%- if node.resource_type == 'model' and node.config.materialized == 'incremental'
            and node.package_name == project_name and node.alias.startswith(prefix) -%}
            {%- do out.append(node.alias) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(out | sort) }}
{% endmacro %}

{# purpose: the columns documented for the model aliased `identifier` (none when unknown) #}
{% macro changelake_documented_columns(identifier) %}
    {%- for node in graph.nodes.values() if node.resource_type == 'model'
        and node.package_name == project_name and node.alias == identifier -%}
        {{ return(node.columns.keys() | list) }}
    {%- endfor -%}
    {{ return([]) }}
{% endmacro %}
