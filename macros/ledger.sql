{#
    The run ledger. Each incremental model owns a ledger table: one row per committed batch
    (kind 'batch'), plus, for the change log, one row per decoded batch it consumed
    (kind 'consumed'). One writer per table: concurrent appends to one parquet table from one
    Spark application are not safe, and dbt runs models on several threads.

    Rows are written first, tagged with the run's batch id (dbt's invocation id); the ledger
    row last. A run killed anywhere before its ledger row is written leaves rows whose batch is
    not in the ledger: every reader ignores them, and the next run reads their input again.
    Parquet appends are not atomic; this makes them safe to repeat.
#}

{# purpose: the ledger relation of an incremental model (by its identifier) #}
{% macro changelake_ledger(model_identifier) %}
    {{ return(target.schema ~ '.changelake_batches__' ~ model_identifier) }}
{% endmacro %}

{# purpose: DDL creating a model's ledger when it does not exist #}
{% macro _changelake_ledger_ddl(model_identifier) %}
    create table if not exists {{ changelake_ledger(model_identifier) }} (
        kind string,
        batch_id string,
        committed_at timestamp,
        rows_written bigint
    )
    using parquet
{% endmacro %}

{# purpose: identifiers of every incremental model in the project (each has a ledger) #}
{% macro _changelake_incremental_models(prefix='') %}
    {%- set out = [] -%}
    {%- for node in graph.nodes.values() -%}
        {%- if node.resource_type == 'model' and node.config.materialized == 'incremental'
            and node.package_name == project_name and node.alias.startswith(prefix) -%}
            {%- do out.append(node.alias) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(out | sort) }}
{% endmacro %}

{# purpose: post-hook committing this run's batch of an incremental model #}
{% macro changelake_commit_batch() %}
    {%- if _changelake_batch_is_empty() -%}
        {{ return('') }}
    {%- endif %}
    insert into {{ changelake_ledger(this.identifier) }}
    select
        'batch' as kind,
        '{{ invocation_id }}' as batch_id,
        current_timestamp() as committed_at,
        count(*) as rows_written
    from {{ this }}
    where batch_id = '{{ invocation_id }}'
    -- a run that wrote nothing commits nothing: the ledger grows with batches, not with runs
    having count(*) > 0
{% endmacro %}

{# purpose: SQL predicate true for rows (of `relation_alias`) of a committed batch #}
{% macro changelake_committed(relation_alias, model_identifier) %}
    {{ relation_alias }}.batch_id in (
        select ledger.batch_id
        from {{ changelake_ledger(model_identifier) }} as ledger
        where ledger.kind = 'batch'
    )
{% endmacro %}
