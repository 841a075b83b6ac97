with

int_records_unioned as (
    select * from {{ ref('int_records_unioned') }}
),

schema_changes as (
    select
        *,
        -- the same schema change delivered twice (re-landed, re-sent after a restart) counts once
        row_number() over (
            partition by change_id order by landed_at, landed_file, landed_line
        ) as delivery_number
    from int_records_unioned
    where error_reason is null and kind = 'ddl'
),

final as (
    select
        -- ids
        change_id as schema_change_id,
        feed,
        topic,
        kafka_partition,
        kafka_offset,
        -- strings
        envelope_format,
        source_engine,
        source_name,
        database_name,
        schema_name,
        table_name,
        op_raw as ddl_kind,
        ddl as ddl_text,
        position,
        -- timestamps
        committed_at,
        captured_at,
        -- booleans
        is_snapshot
    from schema_changes
    where delivery_number = 1
)

select * from final
