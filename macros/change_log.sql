{# purpose: upstream batches (of the incremental models named `prefix`*) committed but not yet
   consumed by this model, at compile time #}
{% macro _changelake_pending_batches(prefix='decoded_') %}
    {%- if not execute -%}
        {{ return([]) }}
    {%- endif -%}
    {%- set query -%}
        select distinct committed.batch_id
        from (
            {%- for model in _changelake_incremental_models(prefix) %}
            select batch_id from {{ changelake_ledger(model) }} where kind = 'batch'
            {%- if not loop.last %} union all{% endif %}
            {%- endfor %}
        ) as committed
        left anti join {{ changelake_ledger(this.identifier) }} as consumed
            on committed.batch_id = consumed.batch_id and consumed.kind = 'consumed'
    {%- endset -%}
    {{ return(run_query(query).columns[0].values() | list) }}
{% endmacro %}

{#
    purpose: post-hook committing a change-log batch together with the decoded batches it
    consumed, in one single-file insert: either both are recorded or neither is.
#}
{% macro changelake_commit_consuming_batch(prefix='decoded_') %}
    {%- set consumed = _changelake_pending_batches(prefix) -%}
    insert into {{ changelake_ledger(this.identifier) }}
    select /*+ coalesce(1) */
        kind,
        batch_id,
        current_timestamp() as committed_at,
        rows_written
    from (
        select
            'batch' as kind,
            '{{ invocation_id }}' as batch_id,
            count(*) as rows_written
        from {{ this }}
        where batch_id = '{{ invocation_id }}'
        {%- for batch_id in consumed %}
        union all
        select 'consumed', '{{ batch_id }}', 0
        {%- endfor %}
    ) as ledger_rows
{% endmacro %}

{#
    purpose: the body of the unified change log: every row and table change of every feed, once,
    with DataWorks update halves merged into one update and SQL Server PK changes linked.
#}
{% macro changelake_change_log(records) %}
    {%- set pending = _changelake_pending_batches() if execute and is_incremental() else [] -%}
    {%- set pending_list -%}
        ({% for b in pending %}'{{ b }}'{{ ", " if not loop.last }}{% else %}''{% endfor %})
    {%- endset -%}
    {%- set columns = [
        'change_id', 'feed', 'topic', 'kafka_partition', 'kafka_offset', 'row_index',
        'landed_file', 'landed_line', 'envelope_format', 'source_engine', 'source_name',
        'database_name', 'schema_name', 'table_name', 'kind', 'op', 'op_raw', 'key_json',
        'before_json', 'after_json', 'unavailable_columns', 'column_types', 'linked_key_json',
        'position', 'transaction_id', 'committed_at', 'captured_at', 'kafka_timestamp',
        'landed_at', 'is_snapshot', 'source_batch_id',
    ] %}
with

records as (
    select * from {{ records }}
),

new_records as (
    select * from records
    where error_reason is null
        and kind in ('row', 'truncate')
        {%- if is_incremental() %}
        and batch_id in {{ pending_list }}
        {%- endif %}
),

{%- if is_incremental() %}

logged as (
    select change_id from {{ this }} as change_log
    where {{ changelake_committed('change_log', this.identifier) }}
),

-- DataWorks update halves of earlier batches still waiting for their partner
waiting_halves as (
    select records.* from records
    left anti join logged
        on sha2(concat_ws('|', records.feed, 'update-pair', records.database_name,
            records.schema_name, records.table_name, records.position), 256) = logged.change_id
    where records.error_reason is null
        and records.envelope_format = 'dataworks'
        and records.op_raw in ('UPDATE_BEFOR', 'UPDATE_BEFORE', 'UPDATE_AFTER')
        and (records.before_json is null or records.after_json is null)
        and records.batch_id not in {{ pending_list }}
),

candidates as (
    select * from new_records
    union all
    select * from waiting_halves
),
{%- else %}

candidates as (
    select * from new_records
),
{%- endif %}

flagged as (
    select
        *,
        -- DataWorks two-record updates: UPDATE_BEFOR and UPDATE_AFTER share a sequenceId
        envelope_format = 'dataworks'
        and op_raw in ('UPDATE_BEFOR', 'UPDATE_BEFORE', 'UPDATE_AFTER')
        and (before_json is null or after_json is null) as is_update_half
    from candidates
),

update_pairs as (
    select
        feed,
        database_name,
        schema_name,
        table_name,
        position,
        max_by(struct(*), op_raw = 'UPDATE_AFTER') as after_half,
        max_by(struct(*), op_raw != 'UPDATE_AFTER') as before_half,
        count(distinct op_raw = 'UPDATE_AFTER') as halves
    from flagged
    where is_update_half
    group by feed, database_name, schema_name, table_name, position
),

merged_updates as (
    select
        sha2(concat_ws('|', feed, 'update-pair', database_name, schema_name, table_name, position), 256)
            as change_id,
        after_half.feed,
        after_half.topic,
        after_half.kafka_partition,
        after_half.kafka_offset,
        after_half.row_index,
        after_half.landed_file,
        after_half.landed_line,
        after_half.envelope_format,
        after_half.source_engine,
        after_half.source_name,
        after_half.database_name,
        after_half.schema_name,
        after_half.table_name,
        after_half.kind,
        after_half.op,
        after_half.op_raw,
        after_half.key_json,
        before_half.before_json,
        after_half.after_json,
        after_half.unavailable_columns,
        after_half.column_types,
        -- the key changed between the halves: a primary-key change
        case
            when before_half.key_json != after_half.key_json then before_half.key_json
        end as linked_key_json,
        after_half.position,
        after_half.transaction_id,
        after_half.committed_at,
        after_half.captured_at,
        after_half.kafka_timestamp,
        after_half.landed_at,
        after_half.is_snapshot,
        after_half.batch_id as source_batch_id
    from update_pairs
    -- a half whose partner has not landed yet waits for a later run
    where halves = 2
),

single_changes as (
    select
        change_id,
        feed,
        topic,
        kafka_partition,
        kafka_offset,
        row_index,
        landed_file,
        landed_line,
        envelope_format,
        source_engine,
        source_name,
        database_name,
        schema_name,
        table_name,
        kind,
        op,
        op_raw,
        key_json,
        before_json,
        after_json,
        unavailable_columns,
        column_types,
        coalesce(
            linked_key_json,
            -- SQL Server PK change: delete (event_serial_no 1) and insert (2) on the same LSNs
            case
                when source_engine = 'sqlserver' and op = 'c'
                    then max(case when op = 'd' then key_json end) over lsn_pair
                when source_engine = 'sqlserver' and op = 'd'
                    then max(case when op = 'c' then key_json end) over lsn_pair
            end
        ) as linked_key_json,
        position,
        transaction_id,
        committed_at,
        captured_at,
        kafka_timestamp,
        landed_at,
        is_snapshot,
        batch_id as source_batch_id
    from flagged
    where not is_update_half
    window lsn_pair as (
        partition by feed, source_name, database_name, schema_name, table_name,
            substring_index(position, '/', 2)
    )
),

all_changes as (
    select {{ columns | join(', ') }} from single_changes
    union all
    select {{ columns | join(', ') }} from merged_updates
),

deduplicated as (
    select
        *,
        -- at-least-once delivery: the same change landed more than once counts once
        row_number() over (
            partition by change_id order by landed_at, landed_file, landed_line
        ) as delivery_number
    from all_changes
),

final as (
    select
        {%- for column in columns %}
        deduplicated.{{ column }},
        {%- endfor %}
        '{{ invocation_id }}' as batch_id
    from deduplicated
    {%- if is_incremental() %}
    left anti join logged on deduplicated.change_id = logged.change_id
    {%- endif %}
    where deduplicated.delivery_number = 1
)

select * from final
{% endmacro %}
