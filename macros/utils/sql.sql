{# purpose: a SQL string literal for any text (quotes and backslashes escaped) #}
{% macro changelake_literal(text) %}
    {{- return("'" ~ (text | string).replace('\\', '\\\\').replace("'", "\\'") ~ "'") -}}
{% endmacro %}

{# purpose: a Spark SQL identifier for any name (backticks doubled inside) #}
{% macro changelake_quoted(name) %}
    {{- return('`' ~ (name | string).replace('`', '``') ~ '`') -}}
{% endmacro %}

{# purpose: a SQL list literal of text values, ('') when empty #}
{% macro changelake_sql_list(values) %}
    {%- set quoted = [] -%}
    {%- for value in values -%}
        {%- do quoted.append(changelake_literal(value)) -%}
    {%- endfor -%}
    {{ return('(' ~ (quoted | join(', ') if quoted else "''") ~ ')') }}
{% endmacro %}

{#
    purpose: `selects` joined by union all; when there is none, `empty` (a select of the same
    columns) returning no row
#}
{% macro changelake_union_all(selects, empty) %}
    {{ return((selects or [empty ~ ' where false']) | join('\nunion all\n')) }}
{% endmacro %}

{# purpose: a SQL boolean literal of true, false or none (a typed null) #}
{% macro changelake_boolean_literal(value) %}
    {{- return('cast(null as boolean)' if value is none else (value | string | lower)) -}}
{% endmacro %}

{#
    purpose: SQL predicate, always true, for the WHERE of a CTE the query names several times:
    Spark copies a deterministic CTE into every place that names it (each copy read and
    computed again), while a non-deterministic one is computed once and its exchange reused.
    This predicate makes the CTE non-deterministic and filters nothing.
#}
{% macro changelake_computed_once() %}
    {{- return('rand() < 2') -}}
{% endmacro %}

{# purpose: 'a.b.c' -> "('a.b.c', 'b.c', 'c')": a SQL list of what follows each dot, and the whole #}
{% macro changelake_dot_tails(name) %}
    {%- set parts = name.split('.') -%}
    {%- set tails = [] -%}
    {%- for index in range(parts | length) -%}
        {%- do tails.append(changelake_literal(parts[index:] | join('.'))) -%}
    {%- endfor -%}
    {{ return('(' ~ tails | join(', ') ~ ')') }}
{% endmacro %}

{#
    purpose: the columns of `query` as DDL (`name type`), read from a temporary view of it
    (analysed, never run) named after `name`; every column nullable, as a CREATE TABLE AS
    SELECT makes them
#}
{% macro changelake_query_columns(name, query) %}
    {%- set shape = name ~ '__changelake_shape' -%}
    {%- call statement('changelake_shape') -%}
        create or replace temporary view {{ shape }} as {{ query }}
    {%- endcall -%}
    {%- set described = run_query('describe ' ~ shape) -%}
    {%- call statement('changelake_shape_dropped') -%}
        drop view if exists {{ shape }}
    {%- endcall -%}
    {%- set columns = [] -%}
    {%- for row in described.rows if row[0] and not row[0].startswith('#') -%}
        {%- do columns.append('`' ~ row[0] | replace('`', '``') ~ '` ' ~ row[1]) -%}
    {%- endfor -%}
    {{ return(columns) }}
{% endmacro %}
