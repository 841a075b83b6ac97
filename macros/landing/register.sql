{#
    purpose: create the run ledgers and changelake_landing_tables, which keeps each feed's
    decode settings (macros/landing/settings.sql). The landed files are read by the Python
    workers, with no table over the landing folders: an external table over a landing folder
    recorded there (as earlier versions created each feed's raw text table and file listing)
    is dropped where it still exists; a drop leaves the landed files in place.
#}
{% macro changelake_register_landing() %}
    {%- if execute -%}
        {%- do run_query('create schema if not exists ' ~ target.schema) -%}
        {#- the schema's tables, listed once for the ledgers' and the segments' steps below -#}
        {%- set listed = [] -%}
        {%- for row in run_query('show tables in ' ~ target.schema) -%}
            {%- do listed.append(row[1] | lower) -%}
        {%- endfor -%}
        {#- a ledger is compacted once its tail holds this many commits; a table's segments
            are merged once this many consumed batches are live -#}
        {%- do changelake_maintain_ledgers(listed,
            var('changelake_ledger_max_tail', 8), var('changelake_segments_max_tail', 8)) -%}
        {%- set recorded_in = target.schema ~ '.changelake_landing_tables' -%}
        {%- do run_query('create table if not exists ' ~ recorded_in
            ~ ' (table_name string, ddl string, recorded_at timestamp) using parquet') -%}
        {%- set recorded = {} -%}
        {%- for row in run_query('select table_name, max_by(ddl, recorded_at) from ' ~ recorded_in
            ~ ' group by table_name') -%}
            {%- do recorded.update({row[0]: row[1]}) -%}
        {%- endfor -%}
        {%- for relation, ddl in recorded.items() if (ddl or '').startswith('create table ') -%}
            {%- set parts = relation.split('.') -%}
            {%- set names = listed if parts[0] | lower == target.schema | lower
                else run_query('show tables in ' ~ parts[0]).columns[1].values() | map('lower') | list -%}
            {%- if parts[-1] | lower in names -%}
                {%- do run_query('drop table if exists ' ~ relation) -%}
            {%- endif -%}
        {%- endfor -%}
        {%- set changed = changelake_check_decode_settings(recorded) -%}
        {%- if changed -%}
            {%- do run_query('insert into ' ~ recorded_in ~ ' values ' ~ changed | join(', ')) -%}
        {%- endif -%}
    {%- endif -%}
{% endmacro %}

{# purpose: a feed's meta with defaults, validated; fails at compile time naming what is wrong #}
{% macro changelake_feed_meta(node) %}
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
    {%- set key_columns = meta.get('key_columns', {}) -%}
    {%- if not key_columns and (envelope_format.split(';')[0] == 'tencent' or shape == 'connect') -%}
        {{ exceptions.raise_compiler_error(
            "landing feed '" ~ node.name ~ "': meta.key_columns is required ("
            ~ ("Tencent messages carry no key" if envelope_format.split(';')[0] == 'tencent'
               else "Kafka Connect sink files keep no Kafka key")
            ~ "): list each table's key columns, e.g. key_columns: {inventory.customers: [id]}") }}
    {%- endif -%}
    {{ return({
        'envelope_format': envelope_format,
        'shape': shape,
        'path': meta.get('path', node.name),
        'glob': meta.get('glob', '*'),
        'key_columns': key_columns,
    }) }}
{% endmacro %}

{# purpose: the `landing` source node of a feed, failing at compile time if there is none #}
{% macro changelake_landing_source(feed) %}
    {%- for node in graph.sources.values() -%}
        {%- if node.source_name == 'landing' and node.name == feed -%}
            {{ return(node) }}
        {%- endif -%}
    {%- endfor -%}
    {{ exceptions.raise_compiler_error("no feed '" ~ feed ~ "' in the landing source") }}
{% endmacro %}

{# purpose: the `landing` source's feed nodes, by name (none while dbt only parses) #}
{% macro changelake_landing_nodes() %}
    {%- set nodes = [] -%}
    {%- if execute -%}
        {%- for node in graph.sources.values() if node.source_name == 'landing' -%}
            {%- do nodes.append(node) -%}
        {%- endfor -%}
    {%- endif -%}
    {{ return(nodes | sort(attribute='name')) }}
{% endmacro %}
