{{ config(
    materialized='incremental',
    incremental_strategy='append',
    on_schema_change='fail',
    post_hook=["{{ changelake_commit_consuming_batch('int_changes_unioned') }}"],
) }}
{#- incremental and append-only: each run adds the recomputed versions of the keys it touched -#}

{{ changelake_versions_model('int_changes_unioned') }}
