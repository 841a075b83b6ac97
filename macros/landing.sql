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
        {%- do _changelake_maintain_ledgers(listed,
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
        {%- for node in _changelake_landing_nodes() -%}
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
            {%- do changed.append('(' ~ _changelake_literal(relation) ~ ', '
                ~ _changelake_literal(ddl) ~ ', current_timestamp())') -%}
        {%- endfor -%}
        {%- do changed.extend(_changelake_check_decode_settings(recorded)) -%}
        {%- if changed -%}
            {%- do run_query('insert into ' ~ recorded_in ~ ' values ' ~ changed | join(', ')) -%}
        {%- endif -%}
    {%- endif -%}
{% endmacro %}

{# purpose: the name under which a feed's decode settings are kept in changelake_landing_tables #}
{% macro _changelake_settings_entry(feed) %}
    {{ return('decode settings of ' ~ feed) }}
{% endmacro %}

{# purpose: a feed's settings that decide what its records decode to, as sorted JSON #}
{% macro _changelake_decode_settings(node) %}
    {%- set meta = _changelake_feed_meta(node) -%}
    {{ return(tojson({
        'envelope_format': meta.envelope_format,
        'shape': meta.shape,
        'key_columns': meta.key_columns,
    }, sort_keys=true)) }}
{% endmacro %}

{#
    purpose: check every feed's decode settings (format, shape, key columns) against those its
    decoded records and logged changes were made with, kept in changelake_landing_tables
    (`recorded`: entry -> latest JSON). A setting changed under records already decoded fails
    the run before anything is built, naming the feed, the change and the fix (a full refresh
    of the feed's decoded model and what derives from it, or the old setting back): applied to
    new files only, it would leave one feed decoded two ways. Key columns added for a table
    not listed before, a feed without a decoded table yet, and settings never recorded are
    recorded as they are; a full refresh of the decoded model records its settings once it
    has rebuilt it (`changelake_record_decode_settings`, on-run-end), so a run killed before
    then still finds the old ones. Returns the rows (SQL tuples) to record.
#}
{% macro _changelake_check_decode_settings(recorded) %}
    {%- set rows = [] -%}
    {%- set problems = [] -%}
    {%- for node in _changelake_landing_nodes() -%}
        {%- set entry = _changelake_settings_entry(node.name) -%}
        {%- set current = _changelake_decode_settings(node) -%}
        {%- set decoded = graph.nodes.get('model.' ~ project_name ~ '.decoded_' ~ node.name) -%}
        {%- if decoded is not none and recorded.get(entry) != current -%}
            {%- set differences = _changelake_settings_differences(recorded.get(entry), current)
                if adapter.get_relation(database=decoded.database, schema=decoded.schema,
                    identifier=decoded.alias) is not none else [] -%}
            {%- if not differences -%}
                {%- do rows.append('(' ~ _changelake_literal(entry) ~ ', '
                    ~ _changelake_literal(current) ~ ', current_timestamp())') -%}
            {%- elif decoded.unique_id in selected_resources
                and not (flags.FULL_REFRESH and decoded.config.full_refresh is not false) -%}
                {%- do problems.append("feed '" ~ node.name ~ "': " ~ differences | join(', ')
                    ~ ' since its landed files were decoded; to decode them again and rebuild what'
                    ~ ' derives from them, run `changelake dbt build --full-refresh --select '
                    ~ decoded.name ~ '+`, or put the old setting back') -%}
            {%- endif -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if problems -%}
        {{ exceptions.raise_compiler_error(problems | join('; ')) }}
    {%- endif -%}
    {{ return(rows) }}
{% endmacro %}

{#
    purpose: what changed between two decode settings (JSON texts) that changes how records
    already decoded would decode: format, shape, a listed table's key columns ([] when
    nothing did, or nothing was recorded)
#}
{% macro _changelake_settings_differences(recorded, current) %}
    {%- set differences = [] -%}
    {%- if recorded is not none -%}
        {%- set before = fromjson(recorded) -%}
        {%- set after = fromjson(current) -%}
        {%- for setting in ['envelope_format', 'shape'] -%}
            {%- if before[setting] != after[setting] -%}
                {%- do differences.append(setting ~ " '" ~ before[setting] ~ "' became '"
                    ~ after[setting] ~ "'") -%}
            {%- endif -%}
        {%- endfor -%}
        {%- for table, columns in before.key_columns.items() -%}
            {%- if after.key_columns.get(table) != columns -%}
                {%- do differences.append('key_columns of ' ~ table ~ ' ' ~ tojson(columns)
                    ~ ' became ' ~ tojson(after.key_columns.get(table))) -%}
            {%- endif -%}
        {%- endfor -%}
    {%- endif -%}
    {{ return(differences) }}
{% endmacro %}

{#
    purpose: on-run-end: record the decode settings of every feed whose decoded model this run
    rebuilt in full (see _changelake_check_decode_settings), in one insert. Done once the run
    ends rather than in each model's post-hook, since decoded models build on several threads
    and concurrent inserts into one table break each other's commit. A run killed after the
    rebuild but before this finds the old settings recorded: the next run asks for the full
    refresh again rather than missing a change.
#}
{% macro changelake_record_decode_settings(results) %}
    {%- if not execute -%}
        {{ return('') }}
    {%- endif -%}
    {%- set rows = [] -%}
    {%- for result in results
        if result.status == 'success' and result.node.resource_type == 'model'
        and result.node.name.startswith('decoded_') -%}
        {%- set full_refresh = result.node.config.full_refresh -%}
        {%- if (flags.FULL_REFRESH if full_refresh is none else full_refresh) -%}
            {%- set node = _changelake_landing_source(result.node.name[('decoded_' | length):]) -%}
            {%- do rows.append('(' ~ _changelake_literal(_changelake_settings_entry(node.name))
                ~ ', ' ~ _changelake_literal(_changelake_decode_settings(node))
                ~ ', current_timestamp())') -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if rows -%}
        {%- do run_query('insert into ' ~ target.schema ~ '.changelake_landing_tables values '
            ~ rows | join(', ')) -%}
    {%- endif -%}
    {{ return('') }}
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
    {%- set meta = _changelake_feed_meta(node) -%}
    {%- set location = _changelake_literal(root ~ '/' ~ meta.path) -%}
    {%- set options -%}
        recursiveFileLookup 'true', pathGlobFilter {{ _changelake_literal(meta.glob) }}
    {%- endset -%}
    {%- set lines -%}
        create table if not exists {{ _changelake_landed_lines(node) }} (value string)
        using text
        options (lineSep '\n', ignoreCorruptFiles 'true', ignoreMissingFiles 'true', {{ options }})
        location {{ location }}
    {%- endset -%}
    {%- set listing -%}
        create table if not exists {{ _changelake_file_listing(node) }}
        using binaryFile
        options ({{ options }})
        location {{ location }}
    {%- endset -%}
    {{ return({
        _changelake_landed_lines(node): lines,
        _changelake_file_listing(node): listing,
    }) }}
{% endmacro %}

{# purpose: the relation reading a feed's landed files line by line: its raw table (the source) #}
{% macro _changelake_landed_lines(node) %}
    {{ return(node.schema ~ '.' ~ node.identifier) }}
{% endmacro %}

{# purpose: the relation listing a feed's landed files (path, size, modification time) #}
{% macro _changelake_file_listing(node) %}
    {{ return(node.schema ~ '.' ~ node.identifier ~ '__files') }}
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
{% macro _changelake_landing_source(feed) %}
    {%- for node in graph.sources.values() -%}
        {%- if node.source_name == 'landing' and node.name == feed -%}
            {{ return(node) }}
        {%- endif -%}
    {%- endfor -%}
    {{ exceptions.raise_compiler_error("no feed '" ~ feed ~ "' in the landing source") }}
{% endmacro %}

{# purpose: the `landing` source's feed nodes, by name (none while dbt only parses) #}
{% macro _changelake_landing_nodes() %}
    {%- set nodes = [] -%}
    {%- if execute -%}
        {%- for node in graph.sources.values() if node.source_name == 'landing' -%}
            {%- do nodes.append(node) -%}
        {%- endfor -%}
    {%- endif -%}
    {{ return(nodes | sort(attribute='name')) }}
{% endmacro %}

{#
    purpose: `selects` joined by union all; when there is none, `empty` (a select of the same
    columns) returning no row
#}
{% macro _changelake_union_all(selects, empty) %}
    {{ return((selects or [empty ~ ' where false']) | join('\nunion all\n')) }}
{% endmacro %}

{# purpose: the folder a feed (its node in the `landing` source) lands in #}
{% macro _changelake_feed_folder(node) %}
    {{ return(var('landing_root') ~ '/' ~ _changelake_feed_meta(node).path) }}
{% endmacro %}

{#
    purpose: a select of (feed, landing_folder, has_landing_folder, files_listed), a row per feed
    declared in the `landing` source (or per node of `nodes`, some of its nodes): its folder,
    whether it exists, and the files in it now. Whether it exists is asked when the macro runs
    (`changelake_folder_exists`, a session function, which a view cannot call) and written in
    as a literal: as of the last build; null where Python cannot see the file system
    (python_udfs.spark_udfs.folder_exists).
#}
{% macro changelake_feed_folders(nodes=none) %}
    {%- set nodes = _changelake_landing_nodes() if nodes is none else nodes -%}
    {%- set folders = [] -%}
    {%- for node in nodes -%}
        {%- do folders.append(_changelake_literal(_changelake_feed_folder(node))) -%}
    {%- endfor -%}
    {%- set found = _changelake_folders_exist(folders) -%}
    {%- set selects = [] -%}
    {%- for node in nodes -%}
        {%- do selects.append('select ' ~ _changelake_literal(node.name) ~ ' as feed, '
            ~ folders[loop.index0] ~ ' as landing_folder, '
            ~ _changelake_boolean_literal(found[loop.index0]) ~ ' as has_landing_folder, '
            ~ 'count(*) as files_listed from ' ~ _changelake_file_listing(node)) -%}
    {%- endfor -%}
    {{ return(_changelake_union_all(selects,
        'select cast(null as string) as feed, cast(null as string) as landing_folder, '
        ~ 'cast(null as boolean) as has_landing_folder, 0 as files_listed')) }}
{% endmacro %}

{#
    purpose: whether each folder (SQL literals) exists, true/false/none, in one query of the
    session function changelake_folder_exists, asked once per invocation: the feed health model
    and the warn test that follows it share the answer (dbt shares the graph dict between nodes)
#}
{% macro _changelake_folders_exist(folders) %}
    {%- if not folders -%}
        {{ return([]) }}
    {%- endif -%}
    {%- set memo = graph.setdefault('changelake_folders_exist', {}).setdefault(invocation_id, {}) -%}
    {%- set unknown = folders | reject('in', memo) | list -%}
    {%- if unknown -%}
        {%- set checks = [] -%}
        {%- for folder in unknown -%}
            {%- do checks.append('changelake_folder_exists(' ~ folder ~ ')') -%}
        {%- endfor -%}
        {%- for value in run_query('select ' ~ checks | join(', ')).rows[0] -%}
            {%- do memo.update({unknown[loop.index0]: value}) -%}
        {%- endfor -%}
    {%- endif -%}
    {%- set found = [] -%}
    {%- for folder in folders -%}
        {%- do found.append(memo[folder]) -%}
    {%- endfor -%}
    {{ return(found) }}
{% endmacro %}

{# purpose: a SQL boolean literal of true, false or none (a typed null) #}
{% macro _changelake_boolean_literal(value) %}
    {{- return('cast(null as boolean)' if value is none else (value | string | lower)) -}}
{% endmacro %}

{#
    purpose: SQL of the declared feeds whose folder lists no file (feed, landing_folder,
    has_landing_folder). At run time the folders are listed once, here: a warning names each such
    feed with its folder and whether the folder is missing or empty, and the SQL returned is
    those rows as literals (the data test that reads it lists nothing again). A feed whose
    decoded model listed its folder in this invocation (_changelake_new_files) is not listed
    again: its count is that listing's.
#}
{% macro changelake_feeds_without_files() %}
    {%- set counted = graph.get('changelake_files_listed', {}) if execute else {} -%}
    {%- set unlisted = [] -%}
    {%- set empty = [] -%}
    {%- for node in _changelake_landing_nodes() -%}
        {%- set count = counted.get(invocation_id ~ '/' ~ node.name) -%}
        {%- do (unlisted if count is none else empty if count == 0 else []).append(node) -%}
    {%- endfor -%}
    {%- set query = 'select feed, landing_folder, has_landing_folder from (' ~ changelake_feed_folders(unlisted)
        ~ ') as folders where files_listed = 0' -%}
    {%- if not execute -%}
        {{ return(query) }}
    {%- endif -%}
    {%- set found = [] -%}
    {%- set folders = [] -%}
    {%- for node in empty -%}
        {%- do folders.append(_changelake_literal(_changelake_feed_folder(node))) -%}
    {%- endfor -%}
    {%- for exists in _changelake_folders_exist(folders) -%}
        {%- do found.append([empty[loop.index0].name, _changelake_feed_folder(empty[loop.index0]), exists]) -%}
    {%- endfor -%}
    {%- for row in (run_query(query).rows if unlisted else []) -%}
        {%- do found.append([row[0], row[1], row[2]]) -%}
    {%- endfor -%}
    {%- set named = [] -%}
    {%- set rows = [] -%}
    {%- set states = {true: 'empty', false: 'no such folder', none: 'no file listed'} -%}
    {%- for row in found | sort -%}
        {%- do named.append(row[0] ~ ' (' ~ row[1] ~ ': ' ~ states[row[2]] ~ ')') -%}
        {%- do rows.append('select ' ~ _changelake_literal(row[0]) ~ ' as feed, '
            ~ _changelake_literal(row[1]) ~ ' as landing_folder, '
            ~ _changelake_boolean_literal(row[2]) ~ ' as has_landing_folder') -%}
    {%- endfor -%}
    {%- if named -%}
        {%- do exceptions.warn(named | length ~ ' declared feed(s) have no landed file: '
            ~ named | join(', ') ~ "; land files there, or fix the feed's path or the landing root") -%}
    {%- endif -%}
    {{ return(_changelake_union_all(rows,
        'select cast(null as string) as feed, cast(null as string) as landing_folder, '
        ~ 'cast(null as boolean) as has_landing_folder')) }}
{% endmacro %}

{#
    purpose: SQL (a select, the columns of int_records_unioned) of the records that this
    invocation's decoded batches hold: each feed whose decoded model committed a batch in this
    invocation, read through its staging by the batch id, a literal. The read prunes to the
    batch's files and runs no query of the ledger, where reading int_records_unioned runs one
    per feed (its staging views find the live segments with a scalar subquery), however few of
    its rows a build's data tests look at. None when no feed committed a batch in this
    invocation. Ask it only in tests (every model has finished).
#}
{% macro changelake_this_build_records() %}
    {%- set selects = [] -%}
    {%- for node in (_changelake_landing_nodes() if execute else []) -%}
        {%- if _changelake_stores_now(['decoded_' ~ node.name]).committed -%}
            {%- do selects.append('select * from (' ~ changelake_staging(node.name, [invocation_id])
                ~ ') as decoded_' ~ node.name) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(selects | join('\nunion all\n') if selects else none) }}
{% endmacro %}

{#
    purpose: the rows this invocation's decoded batches committed, all feeds together (the
    records `changelake_this_build_records` reads, with each unreadable file's marker row), as
    their models noted them when they committed: no query. None when a decoded model wrote in
    this invocation without saying what it committed. Ask it only in tests.
#}
{% macro changelake_this_build_record_count() %}
    {%- set models = [] -%}
    {%- for node in (_changelake_landing_nodes() if execute else []) -%}
        {%- do models.append('decoded_' ~ node.name) -%}
    {%- endfor -%}
    {%- set committed = _changelake_committed_now(models) -%}
    {{ return(none if committed is none else _changelake_batches_of_all(committed).values() | sum) }}
{% endmacro %}

{#
    purpose: SQL counting the landed records (non-empty lines of landed files) of every feed of
    the `landing` source, one row per feed; an empty relation when there are none. With
    `records` (a select of decoded records: this build's, `changelake_this_build_records`),
    only the files those records came from are read: they are listed first, and named to the
    raw tables as literals, so no other file is opened. 'false': none, without a query.
    An uncompressed file's lines are counted as its decoded model reads them, line by line (they
    stream through, whatever the file's size: read whole, a file of 1 GiB ran the default 4 GB
    driver heap out of memory). A compressed one's are counted apart from the text reader that
    decodes it: inflated in steps from its bytes (changelake_gzip_lines), so a file the reader
    read in part would not balance; a stream cut short counts no line, as its decoded model reads
    none.
#}
{% macro changelake_landed_records(records='true') %}
    {%- set files = {} -%}
    {%- if records not in ('true', 'false') and execute -%}
        {%- for row in run_query('select distinct feed, landed_file from (' ~ records ~ ') as records') -%}
            {%- do files.setdefault(row[0], []).append(_changelake_literal(row[1])) -%}
        {%- endfor -%}
    {%- endif -%}
    {%- set scope = 'true' if records == 'true' else 'false' if records == 'false' else 'listed' -%}
    {%- set selects = [] -%}
    {%- for node in _changelake_landing_nodes() if scope == 'true' or node.name in files -%}
        {%- set in_scope -%}
            {%- if scope != 'true' %}
                    and _metadata.file_path in ({{ files[node.name] | join(', ') }})
            {%- endif %}
        {%- endset -%}
        {%- set select -%}
            select {{ _changelake_literal(node.name) }} as feed, sum(records_landed) as records_landed
            from (
                select count(*) as records_landed
                from {{ _changelake_landed_lines(node) }}
                where
                    not endswith(_metadata.file_path, '.gz'){{ in_scope }}
                    and rtrim('\r', value) != ''
                union all
                select coalesce(changelake_gzip_lines(content), 0) as records_landed
                from {{ _changelake_file_listing(node) }}
                where endswith(_metadata.file_path, '.gz'){{ in_scope }}
            ) as counted
        {%- endset -%}
        {%- do selects.append(select) -%}
    {%- endfor -%}
    {{ return(_changelake_union_all(selects, 'select cast(null as string) as feed, 0 as records_landed')) }}
{% endmacro %}

{#
    purpose: SQL (a select) of the committed records of the feeds whose envelope can split an
    update into two records (DataWorks), read through their staging views, with
    `is_update_half`; no row when no feed is DataWorks. The accounting looks for an update
    half's partner there, not in every feed's records.
#}
{% macro changelake_update_half_records() %}
    {%- set selects = [] -%}
    {%- for node in _changelake_landing_nodes()
        if _changelake_feed_meta(node).envelope_format.split(';')[0] == 'dataworks' -%}
        {%- set staging = graph.nodes.get('model.' ~ project_name ~ '.stg_landing__' ~ node.name) -%}
        {%- if staging is not none -%}
            {%- do selects.append('select feed, database_name, schema_name, table_name, position, op_raw, '
                ~ 'error_reason, ' ~ changelake_is_update_half() ~ ' as is_update_half from '
                ~ staging.relation_name) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(_changelake_union_all(selects,
        'select cast(null as string) as feed, cast(null as string) as database_name, '
        ~ 'cast(null as string) as schema_name, cast(null as string) as table_name, '
        ~ 'cast(null as string) as position, cast(null as string) as op_raw, '
        ~ 'cast(null as string) as error_reason, false as is_update_half')) }}
{% endmacro %}

{# purpose: SQL expression: whether a decoded record is one half of a DataWorks update #}
{% macro changelake_is_update_half() %}
    {{- return("envelope_format = 'dataworks' and op_raw in ('UPDATE_BEFOR', 'UPDATE_BEFORE', 'UPDATE_AFTER') "
        ~ "and (before_json is null or after_json is null)") -}}
{% endmacro %}
