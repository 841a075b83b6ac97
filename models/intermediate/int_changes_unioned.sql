{{ config(
    materialized='incremental',
    incremental_strategy='append',
    on_schema_change='fail',
    partition_by=['segment'],
    post_hook=["{{ changelake_commit_consuming_batch() }}"],
) }}
{#- incremental and append-only: each run adds the changes of newly committed decoded batches -#}

{{ changelake_change_log(ref('int_records_unioned')) }}
