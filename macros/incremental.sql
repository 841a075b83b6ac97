{#
    The incremental materialization on Spark, with one change: a model whose compiled SQL found
    nothing new (`_changelake_batch_is_empty`: no new landed file, no pending batch) into a
    table that exists runs its hooks and nothing else. dbt-spark would make a temporary view
    of the empty query, describe it and the table (the `on_schema_change` check) and insert
    nothing: four statements on every idle run of each of the eleven incremental models, most
    of what a run with nothing new costs in its model nodes.

    The hooks still run: a post-hook that finishes work a killed run left (the history's
    compaction) does it here too, and the commit hooks skip an empty batch themselves. A schema
    change of the model's query is then checked by its next run with something new. Everything
    else (a first build, a full refresh, a model with new input) is dbt-spark's materialization,
    unchanged; such a model is noted as writing (`_changelake_note_written`), so that what the
    run's start read of its ledger is read again by the models and tests after it.
#}
{% materialization incremental, adapter='spark', supported_languages=['sql', 'python'] -%}
    {%- set existing = load_relation(this) -%}
    {%- if model['language'] != 'sql' or existing is none or existing.is_view
        or should_full_refresh() or not _changelake_batch_is_empty() -%}
        {%- do _changelake_note_written() -%}
        {{ return(dbt.materialization_incremental_spark()) }}
    {%- endif -%}
    {{ run_hooks(pre_hooks) }}
    {%- call noop_statement('main', 'nothing new') -%}
        /* the model found nothing new: nothing to insert */
    {%- endcall %}
    {{ run_hooks(post_hooks) }}
    {{ return({'relations': [this]}) }}
{%- endmaterialization %}
