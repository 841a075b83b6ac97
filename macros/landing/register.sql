{#
    purpose: create the run ledgers, and the raw table and file listing of every feed declared
    in the `landing` source. A feed's tables are created again when their DDL changed (its
    folder, glob or options): the DDL each was created with is recorded in
    changelake_landing_tables, so a configuration change takes effect on the next run. A run
    killed between the drop and the record finds the DDL unrecorded and creates it again. A
    recorded table that no feed declares any more is dropped.
#}
{% macro changelake_register_landing() %}
    {%- if execute -%}
        {%- do run_query('create schema if not exists ' ~ target.schema) -%}
        {#- the schema's tables, listed once for the ledgers', the segments' and the landing
            tables' steps below (no step before the landing tables' creates or drops one of
            theirs) -#}
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
        {%- set stale = {} -%}
        {%- set wanted = [] -%}
        {%- for node in changelake_landing_nodes() -%}
            {%- for relation, ddl in _changelake_landing_ddl(node, var('landing_root')).items() -%}
                {%- do wanted.append(relation | lower) -%}
                {%- if recorded.get(relation) != ddl -%}
                    {%- do stale.update({relation: ddl}) -%}
                {%- endif -%}
            {%- endfor -%}
        {%- endfor -%}
        {#- a table recorded here that no feed declares any more (a feed removed, or a table a
            feed no longer has) is dropped where it still exists: they are external tables over
            the landing folders, whose files a drop leaves in place (the table also keeps each
            feed's decode settings: entries that are no table) -#}
        {%- set retired = [] -%}
        {%- for relation, ddl in recorded.items()
            if relation | lower not in wanted and (ddl or '').startswith('create table ') -%}
            {%- do retired.append(relation) -%}
        {%- endfor -%}
        {#- a table is dropped only where one exists: in a new schema, a drop of nothing is a
            metastore call each, for each of a feed's tables -#}
        {%- set schemas = [] -%}
        {%- for relation in (stale | list) + retired if relation.split('.')[0] | lower not in schemas -%}
            {%- do schemas.append(relation.split('.')[0] | lower) -%}
        {%- endfor -%}
        {%- set existing = [] -%}
        {%- for schema in schemas -%}
            {%- set names = listed if schema == target.schema | lower
                else run_query('show tables in ' ~ schema).columns[1].values() | map('lower') -%}
            {%- for name in names -%}
                {%- do existing.append(schema ~ '.' ~ name) -%}
            {%- endfor -%}
        {%- endfor -%}
        {%- for relation in retired if relation | lower in existing -%}
            {%- do run_query('drop table if exists ' ~ relation) -%}
        {%- endfor -%}
        {%- set changed = [] -%}
        {%- for relation, ddl in stale.items() -%}
            {%- if relation | lower in existing -%}
                {%- do run_query('drop table if exists ' ~ relation) -%}
            {%- endif -%}
            {%- do run_query(ddl) -%}
            {%- do changed.append('(' ~ changelake_literal(relation) ~ ', '
                ~ changelake_literal(ddl) ~ ', current_timestamp())') -%}
        {%- endfor -%}
        {%- do changed.extend(changelake_check_decode_settings(recorded)) -%}
        {%- if changed -%}
            {%- do run_query('insert into ' ~ recorded_in ~ ' values ' ~ changed | join(', ')) -%}
        {%- endif -%}
    {%- endif -%}
{% endmacro %}

{#
    purpose: DDL of one feed's tables, by relation: the raw table (the dbt source), an external
    text table with a row per line of the landed files, which the decoded models and the
    accounting read (a file of any size streams through; a .gz inflated as it is read; a file
    that cannot be read is skipped, not fatal); and the file listing, every landed file's path
    and size, which tells the unreadable files apart and whose bytes are read only to check
    that a compressed file is whole (changelake_gzip_lines).
#}
{% macro _changelake_landing_ddl(node, root) %}
    {%- set meta = changelake_feed_meta(node) -%}
    {%- set location = changelake_literal(root ~ '/' ~ meta.path) -%}
    {%- set options -%}
        recursiveFileLookup 'true', pathGlobFilter {{ changelake_literal(meta.glob) }}
    {%- endset -%}
    {%- set lines -%}
        create table if not exists {{ changelake_landed_lines(node) }} (value string)
        using text
        options (lineSep '\n', ignoreCorruptFiles 'true', ignoreMissingFiles 'true', {{ options }})
        location {{ location }}
    {%- endset -%}
    {%- set listing -%}
        create table if not exists {{ changelake_file_listing(node) }}
        using binaryFile
        options ({{ options }})
        location {{ location }}
    {%- endset -%}
    {{ return({
        changelake_landed_lines(node): lines,
        changelake_file_listing(node): listing,
    }) }}
{% endmacro %}

{# purpose: the relation reading a feed's landed files line by line: its raw table (the source) #}
{% macro changelake_landed_lines(node) %}
    {{ return(node.schema ~ '.' ~ node.identifier) }}
{% endmacro %}

{# purpose: the relation listing a feed's landed files (path, size, modification time) #}
{% macro changelake_file_listing(node) %}
    {{ return(node.schema ~ '.' ~ node.identifier ~ '__files') }}
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
