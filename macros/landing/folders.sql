{# purpose: the folder a feed (its node in the `landing` source) lands in #}
{% macro _changelake_feed_folder(node) %}
    {{ return(var('landing_root') ~ '/' ~ changelake_feed_meta(node).path) }}
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
    {%- set nodes = changelake_landing_nodes() if nodes is none else nodes -%}
    {%- set folders = [] -%}
    {%- for node in nodes -%}
        {%- do folders.append(changelake_literal(_changelake_feed_folder(node))) -%}
    {%- endfor -%}
    {%- set found = changelake_folders_exist(folders) -%}
    {%- set selects = [] -%}
    {%- for node in nodes -%}
        {%- do selects.append('select ' ~ changelake_literal(node.name) ~ ' as feed, '
            ~ folders[loop.index0] ~ ' as landing_folder, '
            ~ changelake_boolean_literal(found[loop.index0]) ~ ' as has_landing_folder, '
            ~ 'count(*) as files_listed from ' ~ changelake_file_listing(node)) -%}
    {%- endfor -%}
    {{ return(changelake_union_all(selects,
        'select cast(null as string) as feed, cast(null as string) as landing_folder, '
        ~ 'cast(null as boolean) as has_landing_folder, 0 as files_listed')) }}
{% endmacro %}

{#
    purpose: whether each folder (SQL literals) exists, true/false/none, in one query of the
    session function changelake_folder_exists, asked once per invocation: the feed health model
    and the warn test that follows it share the answer (dbt shares the graph dict between nodes)
#}
{% macro changelake_folders_exist(folders) %}
    {%- if not folders -%}
        {{ return([]) }}
    {%- endif -%}
    {%- set memo = changelake_folders_memo() -%}
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

{#
    purpose: SQL of the declared feeds whose folder lists no file (feed, landing_folder,
    has_landing_folder). At run time the folders are listed once, here: a warning names each such
    feed with its folder and whether the folder is missing or empty, and the SQL returned is
    those rows as literals (the data test that reads it lists nothing again). A feed whose
    decoded model listed its folder in this invocation (changelake_new_files) is not listed
    again: its count is that listing's.
#}
{% macro changelake_feeds_without_files() %}
    {%- set counted = changelake_files_listed() -%}
    {%- set unlisted = [] -%}
    {%- set empty = [] -%}
    {%- for node in changelake_landing_nodes() -%}
        {%- set count = counted.get(node.name) -%}
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
        {%- do folders.append(changelake_literal(_changelake_feed_folder(node))) -%}
    {%- endfor -%}
    {%- for exists in changelake_folders_exist(folders) -%}
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
        {%- do rows.append('select ' ~ changelake_literal(row[0]) ~ ' as feed, '
            ~ changelake_literal(row[1]) ~ ' as landing_folder, '
            ~ changelake_boolean_literal(row[2]) ~ ' as has_landing_folder') -%}
    {%- endfor -%}
    {%- if named -%}
        {%- do exceptions.warn(named | length ~ ' declared feed(s) have no landed file: '
            ~ named | join(', ') ~ "; land files there, or fix the feed's path or the landing root") -%}
    {%- endif -%}
    {{ return(changelake_union_all(rows,
        'select cast(null as string) as feed, cast(null as string) as landing_folder, '
        ~ 'cast(null as boolean) as has_landing_folder')) }}
{% endmacro %}
