{# purpose: create the raw landing table of every feed declared in the `landing` source #}
{% macro changelake_register_landing() %}
    {%- if execute -%}
        {%- set root = var('landing_root') -%}
        {%- set statements = [] -%}
        {%- for node in graph.sources.values() if node.source_name == 'landing' -%}
            {%- do statements.append(_changelake_landing_ddl(node, root)) -%}
        {%- endfor -%}
        {%- if statements -%}
            {%- do run_query('create schema if not exists ' ~ target.schema) -%}
        {%- endif -%}
        {%- for statement in statements -%}
            {%- do run_query(statement) -%}
        {%- endfor -%}
    {%- endif -%}
{% endmacro %}

{# purpose: DDL for one feed's raw table: an external text table over its landing folder #}
{% macro _changelake_landing_ddl(node, root) %}
    {%- set meta = node.meta or {} -%}
    {%- for required in ['envelope_format', 'shape'] -%}
        {%- if required not in meta -%}
            {{ exceptions.raise_compiler_error(
                "landing source '" ~ node.name ~ "' needs meta." ~ required) }}
        {%- endif -%}
    {%- endfor -%}
    {%- if meta.shape not in ['kcat'] -%}
        {{ exceptions.raise_compiler_error(
            "landing source '" ~ node.name ~ "': unknown shape '" ~ meta.shape ~ "' (kcat)") }}
    {%- endif -%}
    {%- set location = root ~ '/' ~ (meta.path or node.name) -%}
    create table if not exists {{ node.schema }}.{{ node.identifier }} (value string)
    using text
    options (recursiveFileLookup 'true')
    location '{{ location }}'
{% endmacro %}
