{#
    purpose: an incremental model's first build (and a full refresh) creates its table empty,
    then inserts: a run killed during the insert leaves rows of an uncommitted batch in a table
    that exists (every reader ignores them, the next run is incremental and reads their input
    again), never a folder without a table, which blocks every later CREATE TABLE
    (LOCATION_ALREADY_EXISTS) on every target. The empty CREATE TABLE AS SELECT writes no data;
    only a kill within it can leave a folder (the embedded target removes such a folder at
    start). Other tables, views and temporary views are built as dbt-spark builds them.
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
    {%- call statement('changelake_create_empty') -%}
        {{ dbt.spark__create_table_as(false, relation, query ~ '\nwhere false', language) }}
    {%- endcall -%}
    insert into {{ relation }} by name
    {{ query }}
{%- endmacro %}

{#
    purpose: dbt-spark's append (an incremental run's insert), skipped when the model found
    nothing new (`_changelake_batch_is_empty`): an insert of no rows still writes an empty
    parquet file, so a feed without new files would add one to its table on every run
#}
{% macro get_insert_into_sql(source_relation, target_relation) %}
    {%- if _changelake_batch_is_empty() -%}
        {{ return('select 1 as changelake_nothing_new where false') }}
    {%- endif -%}
    {{ return(dbt.get_insert_into_sql(source_relation, target_relation)) }}
{% endmacro %}
