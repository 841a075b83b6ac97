{#
    purpose: the body of the unified change log: every row and table change of every feed, once,
    with DataWorks update halves merged into one update and SQL Server PK changes linked.

    Only newly committed decoded batches are read. A change already logged (the same source
    change re-sent by a connector restart or landed twice) is not logged again: its change_id
    is its source identity. A DataWorks update half whose partner has not landed yet is logged
    with kind 'update_half' (no reader sees it) and merged when the partner comes.
#}
{% macro changelake_change_log(records) %}
    {%- set incremental = is_incremental() -%}
    {%- set pending_by_model = changelake_pending_batches_by_model() if execute and incremental else {} -%}
    {%- set pending = changelake_batches_of_all(pending_by_model) -%}
    {#- built from scratch after every decoded model was: their live batches are the ones they
        committed in this invocation, and the feeds that committed none are not read -#}
    {%- set decoded_models = changelake_incremental_models('decoded_') if execute else [] -%}
    {%- set rebuilt_by_model = changelake_committed_now(decoded_models)
        if execute and not incremental and changelake_rebuilt_now(decoded_models) else none -%}
    {%- set by_literals = pending_by_model if incremental else rebuilt_by_model -%}
    {%- if incremental and not pending -%}
        {#- nothing new: write nothing, read nothing, commit nothing -#}
        {{ return(changelake_note_nothing_new() ~ 'select * from ' ~ this ~ ' where false') }}
    {%- endif -%}
    {%- set columns = [
        'change_id', 'feed', 'topic', 'kafka_partition', 'kafka_offset', 'row_index',
        'landed_file', 'landed_line', 'envelope_format', 'source_engine', 'source_name',
        'database_name', 'schema_name', 'table_name', 'kind', 'op', 'op_raw', 'key_json',
        'before_json', 'after_json', 'unavailable_columns', 'column_types', 'linked_key_json',
        'position', 'transaction_id', 'committed_at', 'captured_at', 'kafka_timestamp',
        'landed_at', 'is_snapshot', 'source_batch_id',
    ] %}
    {%- set pair_id = changelake_pair_change_id() %}
with

records as (
    {%- if by_literals %}
    {#- each feed's staging of its pending batches, read by literals: the staging views (whose
        live segments are a query of each feed's ledger) are for readers of every record; a
        feed with no pending batch is not read at all #}
    {%- for model in decoded_models if model in by_literals %}
    select * from ({{ changelake_staging(model.removeprefix('decoded_'), by_literals[model]) }}) as {{ model }}
    {%- if not loop.last %}
    union all
    {%- endif %}
    {%- endfor %}
    {%- else %}
    select * from {{ records }}
    {%- endif %}
),

new_records as (
    select
        {{ columns[:-1] | join(', ') }},
        batch_id as source_batch_id
    from records
    where error_reason is null
        and kind in ('row', 'truncate')
        {%- if incremental %}
        -- named six times below (pairs, single changes, the repeat check): read once
        and {{ changelake_computed_once() }}
        {%- endif %}
),

{%- if incremental %}

logged as (
    select * from {{ this }} as change_log
    where {{ changelake_committed_in_run('change_log', this.identifier) }}
),

-- DataWorks update halves logged by earlier runs (few: only halves whose partner landed in a
-- later batch), with the id their merged update gets
logged_halves as (
    select
        halves.*,
        {{ pair_id }} as pair_change_id
    from logged as halves
    where halves.kind = 'update_half'
),

-- those whose merged update is logged: the log's ids probed against the few pair ids (a
-- broadcast semi join, one pass over the ids, no shuffle of the log)
paired_halves as (
    select /*+ broadcast(logged_halves) */
        logged.change_id
    from logged
    left semi join logged_halves
        on logged.change_id = logged_halves.pair_change_id
),

-- DataWorks update halves of earlier runs still waiting for their partner
waiting_halves as (
    select
        {%- for column in columns %}
        {{ "'row' as kind" if column == 'kind' else 'halves.' ~ column }}{{ "," if not loop.last }}
        {%- endfor %}
    from logged_halves as halves
    left anti join paired_halves
        on halves.pair_change_id = paired_halves.change_id
),

candidates as (
    select * from new_records
    union all
    -- a waiting half is logged as kind 'update_half'; here it is a row change again
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
        {{ changelake_is_update_half() }} as is_update_half
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
        -- both halves present: an UPDATE_AFTER and a before half (a half may come twice)
        count(distinct op_raw = 'UPDATE_AFTER') as halves
    from flagged
    where is_update_half
    group by feed, database_name, schema_name, table_name, position
),

merged_updates as (
    select
        {{ pair_id }} as change_id,
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
        after_half.source_batch_id
    from update_pairs
    where halves = 2
),

-- a half whose partner has not landed yet waits, logged but seen by no reader
unmatched_halves as (
    select after_half.* except (kind, is_update_half), 'update_half' as kind
    from update_pairs
    where halves < 2
),

single_changes as (
    select {{ columns | join(', ') }}
    from flagged
    where not is_update_half and source_engine is distinct from 'sqlserver'
    union all
    -- a SQL Server PK change: a delete (event_serial_no 1) and an insert (2) on the same LSNs;
    -- the window sorts the SQL Server changes alone (row-group statistics skip other feeds)
    select
        {%- for column in columns %}
        {%- if column == 'linked_key_json' %}
        coalesce(
            linked_key_json,
            case
                when op = 'c' then max(case when op = 'd' then key_json end) over lsn_pair
                when op = 'd' then max(case when op = 'c' then key_json end) over lsn_pair
            end
        ) as linked_key_json{{ ',' if not loop.last }}
        {%- else %}
        {{ column }}{{ ',' if not loop.last }}
        {%- endif %}
        {%- endfor %}
    from flagged
    where not is_update_half and source_engine = 'sqlserver'
    window lsn_pair as (
        partition by feed, source_name, database_name, schema_name, table_name,
            substring_index(position, '/', 2)
    )
),

all_changes as (
    select {{ columns | join(', ') }} from single_changes
    union all
    select {{ columns | join(', ') }} from merged_updates
    union all
    select {{ columns | join(', ') }} from unmatched_halves
),

{%- if incremental %}

-- the logged changes the new ones may repeat: the new ids are few, so this semi join probes
-- the log's ids against them (broadcast when the pending batches are small enough to)
repeated as (
    select {{ '/*+ broadcast(new_ids) */' if pending.values() | sum <= changelake_broadcast_row_limit() else '' }}
        logged.change_id
    from logged
    left semi join (select change_id from all_changes) as new_ids
        on logged.change_id = new_ids.change_id
),
{%- endif %}

deduplicated as (
    select
        *,
        -- at-least-once delivery: the same change landed or sent more than once counts once
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
        '{{ invocation_id }}' as batch_id,
        {{ changelake_segment_column() }}
    from deduplicated
    {%- if incremental %}
    left anti join repeated on deduplicated.change_id = repeated.change_id
    {%- endif %}
    where deduplicated.delivery_number = 1
)

select * from final
{% endmacro %}

{#
    purpose: SQL expression: the change id of the update a complete pair of DataWorks update
    halves merges into, from the columns of a half (optionally of `relation_alias`)
#}
{% macro changelake_pair_change_id(relation_alias=none) %}
    {%- set parts = [] -%}
    {%- for column in ['feed', "'update-pair'", 'database_name', 'schema_name', 'table_name', 'position'] -%}
        {%- do parts.append(column if column.startswith("'") or relation_alias is none
            else relation_alias ~ '.' ~ column) -%}
    {%- endfor -%}
    {{ return("sha2(concat_ws('|', " ~ parts | join(', ') ~ "), 256)") }}
{% endmacro %}

{#
    purpose: the most rows of new records whose change ids a read of the change log's past is
    given as a broadcast (the change log's search for repeats, the accounting test's search
    for the changes it accounts for); more, and Spark picks the join itself
#}
{% macro changelake_broadcast_row_limit() %}
    {{ return(2000000) }}
{% endmacro %}
