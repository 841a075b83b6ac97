{# purpose: create the run ledgers and the raw table of every feed declared in the `landing` source #}
{% macro changelake_register_landing() %}
    {%- if execute -%}
        {%- do run_query('create schema if not exists ' ~ target.schema) -%}
        {%- for model in _changelake_incremental_models() -%}
            {%- do run_query(_changelake_ledger_ddl(model)) -%}
        {%- endfor -%}
        {%- for node in graph.sources.values() if node.source_name == 'landing' -%}
            {%- do run_query(_changelake_landing_ddl(node, var('landing_root'))) -%}
        {%- endfor -%}
    {%- endif -%}
{% endmacro %}

{# purpose: DDL for one feed's raw table: an external text table, one row per landed file #}
{% macro _changelake_landing_ddl(node, root) %}
    {%- set meta = _changelake_feed_meta(node) -%}
    create table if not exists {{ node.schema }}.{{ node.identifier }} (value string)
    using text
    options (wholetext 'true', recursiveFileLookup 'true', pathGlobFilter {{ _changelake_literal(meta.glob) }})
    location {{ _changelake_literal(root ~ '/' ~ meta.path) }}
{% endmacro %}

{# purpose: a feed's meta with defaults, validated; fails at compile time naming what is wrong #}
{% macro _changelake_feed_meta(node) %}
    {%- set meta = node.meta or {} -%}
    {%- set formats = ['debezium', 'dtle_ddl', 'dataworks', 'tencent', 'canal', 'maxwell', 'ogg'] -%}
    {%- set envelope_format = meta.get('envelope_format') -%}
    {%- if not envelope_format or envelope_format.split(';')[0] not in formats -%}
        {{ exceptions.raise_compiler_error(
            "landing feed '" ~ node.name ~ "': meta.envelope_format must be one of "
            ~ formats | join(', ') ~ " (got '" ~ envelope_format ~ "')") }}
    {%- endif -%}
    {%- set shape = meta.get('shape', 'auto') -%}
    {%- if shape not in ['kcat', 'connect', 'auto'] -%}
        {{ exceptions.raise_compiler_error(
            "landing feed '" ~ node.name ~ "': meta.shape must be kcat, connect or auto (got '"
            ~ shape ~ "')") }}
    {%- endif -%}
    {{ return({
        'envelope_format': envelope_format,
        'shape': shape,
        'path': meta.get('path', node.name),
        'glob': meta.get('glob', '*'),
        'key_columns': meta.get('key_columns', {}),
    }) }}
{% endmacro %}

{# purpose: the `landing` source node of a feed, failing at compile time if there is none #}
{% macro _changelake_landing_source(feed) %}
    {%- for node in graph.sources.values() -%}
        {%- if node.source_name == 'landing' and node.name == feed -%}
            {{ return(node) }}
        {%- endif -%}
    {%- endfor -%}
    {{ exceptions.raise_compiler_error("no feed '" ~ feed ~ "' in the landing source") }}
{% endmacro %}

{# purpose: a select of one `feed` column, a row per feed declared in the `landing` source #}
{% macro changelake_declared_feeds() %}
    {%- set names = [] -%}
    {%- if execute -%}
        {%- for node in graph.sources.values() if node.source_name == 'landing' -%}
            {%- do names.append(_changelake_literal(node.name)) -%}
        {%- endfor -%}
    {%- endif -%}
    {%- if names -%}
        select explode(array({{ names | sort | join(', ') }})) as feed
    {%- else -%}
        select cast(null as string) as feed where false
    {%- endif -%}
{% endmacro %}
