{{ config(
    materialized='incremental',
    incremental_strategy='append',
    on_schema_change='fail',
    partition_by=['batch_id', 'part'],
    post_hook=[
        "{{ changelake_commit_consuming_batch('int_changes_unioned') }}",
        "{{ changelake_compact_history() }}",
    ],
) }}
{#- the layered history store: each run appends one layer (batch_id) for the keys it touched;
    compaction folds layers into a base (macros/history.sql) -#}

{{ changelake_versions_model('int_changes_unioned') }}
