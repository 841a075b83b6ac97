{{ config(
    materialized='incremental',
    incremental_strategy='append',
    on_schema_change='fail',
    partition_by=['batch_id', 'part'],
    options={'parquet.block.size': var('changelake_history_row_group_bytes', 4194304) | string},
    post_hook=[
        "{{ changelake_commit_consuming_batch('int_changes_unioned') }}",
        "{{ changelake_note_full_fold_committed() }}",
        "{{ changelake_compact_history() }}",
    ],
) }}
{#- the layered history store: each run appends one layer (batch_id) for the keys it touched;
    compaction folds layers into a base (macros/history/). Each layer is written in key
    order in row groups of at most 4 MiB (before compression): a read of one key skips the
    other keys' row groups (changelake_layer_order). -#}

{{ changelake_versions_model('int_changes_unioned') }}
