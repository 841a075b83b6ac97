{{ config(tags=["accounting"]) }}
{#-
    Row accounting, per feed; returns the feeds where it does not balance:
      landed records (non-empty lines of landed files) = decoded records
      decoded records = with changes + with schema changes + filtered (heartbeat, tombstone,
                        transaction marker, message) + quarantined
      distinct changes (DataWorks update halves: one per complete pair) = cdc_change_log rows
-#}
{%- set changed = changelake_relation_changed(ref('int_records_unioned'))
    or changelake_relation_changed(ref('cdc_change_log')) %}
with

int_records_unioned as (
    select * from {{ ref('int_records_unioned') }}
),

cdc_change_log as (
    select * from {{ ref('cdc_change_log') }}
),

landed as (
    {{ changelake_landed_records() }}
),

records as (
    select
        *,
        concat(landed_file, '#', landed_line) as record_id,
        envelope_format = 'dataworks'
        and op_raw in ('UPDATE_BEFOR', 'UPDATE_BEFORE', 'UPDATE_AFTER')
        and (before_json is null or after_json is null) as is_update_half
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

complete_pairs as (
    select
        feed,
        count(*) as pairs
    from (
        select
            feed,
            database_name,
            schema_name,
            table_name,
            position
        from records
        where error_reason is null and is_update_half
        group by feed, database_name, schema_name, table_name, position
        having count(distinct op_raw = 'UPDATE_AFTER') = 2
    ) as pairs_by_key
    group by feed
),

logged as (
    select
        feed,
        count(*) as changes_logged
    from cdc_change_log
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
    {{ '' if changed else 'false and' }} (
        records_landed != records_decoded
        or records_decoded != records_classified
        or changes_expected != changes_logged
    )
