{# purpose: the name under which a feed's decode settings are kept in changelake_landing_tables #}
{% macro _changelake_settings_entry(feed) %}
    {{ return('decode settings of ' ~ feed) }}
{% endmacro %}

{# purpose: a feed's settings that decide what its records decode to, as sorted JSON #}
{% macro _changelake_decode_settings(node) %}
    {%- set meta = changelake_feed_meta(node) -%}
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
{% macro changelake_check_decode_settings(recorded) %}
    {%- set rows = [] -%}
    {%- set problems = [] -%}
    {%- for node in changelake_landing_nodes() -%}
        {%- set entry = _changelake_settings_entry(node.name) -%}
        {%- set current = _changelake_decode_settings(node) -%}
        {%- set decoded = graph.nodes.get('model.' ~ project_name ~ '.decoded_' ~ node.name) -%}
        {%- if decoded is not none and recorded.get(entry) != current -%}
            {%- set differences = _changelake_settings_differences(recorded.get(entry), current)
                if adapter.get_relation(database=decoded.database, schema=decoded.schema,
                    identifier=decoded.alias) is not none else [] -%}
            {%- if not differences -%}
                {%- do rows.append('(' ~ changelake_literal(entry) ~ ', '
                    ~ changelake_literal(current) ~ ', current_timestamp())') -%}
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
    rebuilt in full (see changelake_check_decode_settings), in one insert. Done once the run
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
            {%- set node = changelake_landing_source(result.node.name[('decoded_' | length):]) -%}
            {%- do rows.append('(' ~ changelake_literal(_changelake_settings_entry(node.name))
                ~ ', ' ~ changelake_literal(_changelake_decode_settings(node))
                ~ ', current_timestamp())') -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if rows -%}
        {%- do run_query('insert into ' ~ target.schema ~ '.changelake_landing_tables values '
            ~ rows | join(', ')) -%}
    {%- endif -%}
    {{ return('') }}
{% endmacro %}
