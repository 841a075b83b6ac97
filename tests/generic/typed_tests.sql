{#- Generic tests for the typed tables. -#}

{#-
    purpose: the source table's columns that its typed entry does not list (a column added by
    DDL after the entry was written): one row per column, with the changes that carry it. The
    build warns naming them; adding each under the entry's `columns` types it. A build checks
    the changes it logged; `dbt test` (or the var changelake_test_scope 'all') every change.
-#}
{% test typed_columns_cover_the_source(model, feed, source_table, columns) %}
    {{ config(severity='warn') }}
    {%- set changes = ref('int_changes_unioned') -%}
    {%- set missing = [] -%}
    {%- if execute and changelake_relation_changed(changes) -%}
        {%- set query -%}
            select column_name, count(*) as changes
            from (
                select explode(json_object_keys(coalesce(after_json, before_json))) as column_name
                from {{ changes }}
                where
                    {{ changelake_this_build_rows() }}
                    and kind = 'row'
                    and feed = {{ changelake_literal(feed) }}
                    and concat_ws('.', database_name, schema_name, table_name)
                        = {{ changelake_literal(source_table) }}
            ) as source_columns
            where column_name not in {{ changelake_sql_list(columns) }}
            group by column_name
            order by column_name
        {%- endset -%}
        {%- set missing = run_query(query).rows | map('list') | list -%}
    {%- endif -%}
    {%- set named = [] -%}
    {%- set selects = [] -%}
    {%- for column_name, count in missing -%}
        {%- do named.append("'" ~ column_name ~ "' (" ~ count ~ " changes)") -%}
        {%- do selects.append('select ' ~ changelake_literal(column_name) ~ ' as column_name, '
            ~ count ~ ' as changes') -%}
    {%- endfor -%}
    {%- if named -%}
        {%- do exceptions.warn(model.identifier ~ ": " ~ source_table ~ " (feed " ~ feed
            ~ ") has columns its typed_tables entry does not list: " ~ named | join(', ')
            ~ "; add each under the entry's columns, with its type, to type it") -%}
    {%- endif %}
    {{ changelake_union_all(selects, 'select cast(null as string) as column_name, 0 as changes') }}
{% endtest %}
