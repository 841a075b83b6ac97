{#
    purpose: an incremental model's first build (and a full refresh) creates its table empty,
    then inserts: a run killed during the insert leaves rows of an uncommitted batch in a table
    that exists (every reader ignores them, the next run is incremental and reads their input
    again), never a folder of data files without a table, which blocks every later CREATE
    TABLE (LOCATION_ALREADY_EXISTS) on every target. The empty table is created from the
    columns of the query (`changelake_query_columns`), not by a CREATE TABLE AS SELECT: that
    writes its (empty) result into the table's folder before the metastore holds the table, so
    a kill within it left a folder that no target but the embedded one removes. A plain CREATE
    TABLE writes no file; killed within it, it leaves at most an empty folder, which does not
    block. A body that found nothing to read leaves the table empty with no insert. Other
    tables, views and temporary views are built as dbt-spark builds them.
#}
{% macro spark__create_table_as(temporary, relation, compiled_code, language='sql') -%}
    {%- if temporary or language != 'sql' or config.get('materialized') != 'incremental' -%}
        {{ return(dbt.spark__create_table_as(temporary, relation, compiled_code, language)) }}
    {%- endif -%}
    {%- set query -%}
        select * from (
            {{ compiled_code }}
        ) as changelake_first_build
    {%- endset -%}
    {%- set columns = changelake_query_columns(relation.identifier, query) -%}
    {%- call statement('changelake_create_empty') -%}
        create table {{ relation }} ({{ columns | join(', ') }})
        {{ file_format_clause() }}
        {{ options_clause() }}
        {{ tblproperties_clause() }}
        {{ partition_cols(label="partitioned by") }}
        {{ clustered_cols(label="clustered by") }}
        {{ location_clause() }}
        {{ comment_clause() }}
    {%- endcall -%}
    {%- if changelake_batch_is_empty() -%}
        {#- the body found nothing to read (a feed with no file): the table stays empty -#}
        select 0 as rows_inserted
    {%- else -%}
    insert into {{ relation }} by name
    {{ query }}
    {%- endif -%}
{%- endmacro %}
