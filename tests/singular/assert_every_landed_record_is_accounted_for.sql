{{ config(tags=["accounting"]) }}
{#-
    Row accounting, per feed; returns the feeds where it does not balance:
      landed records (non-empty lines of landed files) = decoded records
      decoded records = with changes + with schema changes + filtered (heartbeat, tombstone,
                        transaction marker, message) + quarantined
      distinct changes (DataWorks update halves: one per complete pair) = cdc_change_log rows

    `dbt test` (or the var changelake_test_scope 'all') accounts for every record. `dbt build`
    and `dbt run` account for the records their own decoded batches hold (test_scope.sql): the
    lines of the files those batches tried, those records' classes, and that each distinct
    change among them (a pair: once both halves have landed, in any batch) is in the change log.
    Those records are read from the feeds' batches by literals (changelake_this_build_records),
    not through int_records_unioned, whose reads find every feed's live segments first.
-#}
{%- set changed = changelake_relation_changed(ref('int_records_unioned'))
    or changelake_relation_changed(ref('cdc_change_log')) %}
{%- set per_batch = changelake_this_build_rows() != 'true' %}
{%- set this_build = changelake_this_build_records() if per_batch and changed else none %}
{%- set this_build_rows = changelake_this_build_record_count() if this_build else none %}
{%- set broadcast = this_build_rows is not none and this_build_rows <= changelake_broadcast_row_limit() %}
{%- set read = ref('int_records_unioned') if not per_batch
    else '(' ~ (this_build or 'select * from ' ~ ref('int_records_unioned') ~ ' where false') ~ ') as this_build' %}
with

int_records_unioned as (
    select * from {{ read }}
),

cdc_change_log as (
    select * from {{ ref('cdc_change_log') }}
),

landed as (
    {{ changelake_landed_records((this_build or 'false') if per_batch else 'true') }}
),

records as (
    select
        *,
        concat(landed_file, '#', landed_line) as record_id,
        {{ changelake_is_update_half() }} as is_update_half
    from int_records_unioned
),

decoded as (
    select
        feed,
        count(distinct record_id) as records_decoded,
        count(distinct case when error_reason is not null then record_id end) as quarantined,
        count(distinct case when error_reason is null and kind in ('row', 'truncate') then record_id end)
            as with_changes,
        count(distinct case when error_reason is null and kind = 'ddl' then record_id end) as with_ddl,
        count(distinct case
            when error_reason is null and kind in ('heartbeat', 'tombstone', 'transaction', 'message')
                then record_id
        end) as filtered,
        count(distinct case
            when error_reason is null and kind in ('row', 'truncate') and not is_update_half then change_id
        end) as single_changes
    from records
    group by feed
),

-- the records of the feeds that can send update halves (DataWorks): the halves' partners are
-- looked for there only, not in every feed's records
dataworks_records as (
    {{ changelake_update_half_records() }}
),

-- the complete pairs of DataWorks update halves (both halves landed, in any batch), each once,
-- of the halves among the records accounted for
pairs as (
    select
        halves.feed,
        {{ changelake_pair_change_id('halves') }} as change_id
    from dataworks_records as halves
    left semi join records as touched
        on
            touched.is_update_half
            and halves.feed = touched.feed
            and halves.database_name <=> touched.database_name
            and halves.schema_name <=> touched.schema_name
            and halves.table_name <=> touched.table_name
            and halves.position <=> touched.position
    where halves.error_reason is null and halves.is_update_half
    group by halves.feed, halves.database_name, halves.schema_name, halves.table_name, halves.position
    having count(distinct halves.op_raw = 'UPDATE_AFTER') = 2
),

complete_pairs as (
    select
        feed,
        count(*) as pairs
    from pairs
    group by feed
),

-- per batch (read then only): the distinct changes of the records accounted for
changes_accounted as (  -- noqa: ST03
    select
        feed,
        change_id
    from records
    where error_reason is null and kind in ('row', 'truncate') and not is_update_half
    union all
    select
        feed,
        change_id
    from pairs
),

-- those the change log holds, each once: one read of the log's ids, joined to those accounted
-- for (broadcast when few). A semi join of the records against the log would be planned once
-- per feed (Spark pushes it into each branch of the records' union), each a shuffle of the log.
found as (  -- noqa: ST03
    select {{ '/*+ broadcast(changes_accounted) */' if broadcast else '' }} distinct
        changes_accounted.feed,
        changes_accounted.change_id
    from cdc_change_log
    inner join changes_accounted on cdc_change_log.change_id = changes_accounted.change_id
),

logged as (
    select
        feed,
        count(*) as changes_logged
    from {{ 'found' if per_batch else 'cdc_change_log' }}
    group by feed
),

final as (
    select
        decoded.feed,
        decoded.records_decoded,
        coalesce(landed.records_landed, 0) as records_landed,
        decoded.with_changes + decoded.with_ddl + decoded.filtered + decoded.quarantined as records_classified,
        decoded.single_changes + coalesce(complete_pairs.pairs, 0) as changes_expected,
        coalesce(logged.changes_logged, 0) as changes_logged
    from decoded
    left join landed on decoded.feed = landed.feed
    left join complete_pairs on decoded.feed = complete_pairs.feed
    left join logged on decoded.feed = logged.feed
)

select * from final
where
    -- a build that committed no batch upstream changed nothing to account for (test_scope.sql)
    {{ '' if changed else 'false and' ~ changelake_note_test_unchanged() }} (
        records_landed != records_decoded
        or records_decoded != records_classified
        or changes_expected != changes_logged
    )
