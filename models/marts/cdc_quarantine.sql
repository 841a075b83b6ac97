with

int_records_unioned as (
    select * from {{ ref('int_records_unioned') }}
),

final as (
    select
        -- ids
        feed,
        topic,
        kafka_partition,
        kafka_offset,
        landed_file,
        landed_line,
        -- strings
        envelope_format,
        error_reason,
        failed_raw_record as raw_record,
        -- timestamps
        landed_at
    from int_records_unioned
    where error_reason is not null
)

select * from final
