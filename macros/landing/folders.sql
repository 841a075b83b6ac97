{# purpose: the folder a feed (its node in the `landing` source) lands in #}
{% macro changelake_feed_folder(node) %}
    {{ return(var('landing_root') ~ '/' ~ changelake_feed_meta(node).path) }}
{% endmacro %}

{# purpose: SQL of the first arguments of the landing table functions for a feed (its node in the `landing` source): its folder and glob, as literals #}
{% macro changelake_feed_files_args(node) %}
    {{ return(changelake_literal(changelake_feed_folder(node)) ~ ', '
        ~ changelake_literal(changelake_feed_meta(node).glob)) }}
{% endmacro %}

{#
    purpose: a select of (feed, landing_folder, has_landing_folder, files_listed), a row per feed
    declared in the `landing` source (or per node of `nodes`, some of its nodes): its folder,
    whether it exists and how many files it holds, all asked when the macro runs (the Python
    functions changelake_folder_exists and changelake_landed_files, which a view cannot call)
    and written in as literals: as of the last build. has_landing_folder is null where the
    file system cannot tell.
#}
{% macro changelake_feed_folders(nodes=none) %}
    {%- set nodes = changelake_landing_nodes() if nodes is none else nodes -%}
    {%- set folders = [] -%}
    {%- for node in nodes -%}
        {%- do folders.append(changelake_literal(changelake_feed_folder(node))) -%}
    {%- endfor -%}
    {%- set found = changelake_folders_exist(folders) -%}
    {%- set counts = changelake_count_feed_files(nodes) -%}
    {%- set selects = [] -%}
    {%- for node in nodes -%}
        {%- do selects.append('select ' ~ changelake_literal(node.name) ~ ' as feed, '
            ~ folders[loop.index0] ~ ' as landing_folder, '
            ~ changelake_boolean_literal(found[loop.index0]) ~ ' as has_landing_folder, '
            ~ counts[node.name] ~ ' as files_listed') -%}
    {%- endfor -%}
    {{ return(changelake_union_all(selects,
        'select cast(null as string) as feed, cast(null as string) as landing_folder, '
        ~ 'cast(null as boolean) as has_landing_folder, 0 as files_listed')) }}
{% endmacro %}

{#
    purpose: how many files the folder of each node of `nodes` (feeds of the `landing` source)
    holds, {feed: count}: the count a decoded model noted when it listed the folder in this
    invocation, else listed now, every such folder in one query, and noted
#}
{% macro changelake_count_feed_files(nodes) %}
    {%- set counts = {} -%}
    {%- set noted = changelake_files_listed() -%}
    {%- set selects = [] -%}
    {%- for node in nodes -%}
        {%- if node.name in noted -%}
            {%- do counts.update({node.name: noted[node.name]}) -%}
        {%- else -%}
            {%- do selects.append('select ' ~ changelake_literal(node.name) ~ ' as feed, count(*) as files '
                ~ 'from changelake_landed_files(' ~ changelake_feed_files_args(node) ~ ')') -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if selects and execute -%}
        {%- for row in run_query(selects | join(' union all ')).rows -%}
            {%- do counts.update({row[0]: row[1] | int}) -%}
            {%- do changelake_note_files_listed(row[0], row[1] | int) -%}
        {%- endfor -%}
    {%- endif -%}
    {{ return(counts) }}
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
    has_landing_folder), as literals: a folder is listed once an invocation (a feed whose
    decoded model listed it in this invocation is not listed again), and a warning names each
    such feed with its folder and whether the folder is missing or empty.
#}
{% macro changelake_feeds_without_files() %}
    {%- set nodes = changelake_landing_nodes() -%}
    {%- set counts = changelake_count_feed_files(nodes) -%}
    {%- set empty = [] -%}
    {%- set folders = [] -%}
    {%- for node in nodes if counts[node.name] == 0 -%}
        {%- do empty.append(node) -%}
        {%- do folders.append(changelake_literal(changelake_feed_folder(node))) -%}
    {%- endfor -%}
    {%- set found = [] -%}
    {%- for exists in changelake_folders_exist(folders) -%}
        {%- do found.append([empty[loop.index0].name, changelake_feed_folder(empty[loop.index0]), exists]) -%}
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
