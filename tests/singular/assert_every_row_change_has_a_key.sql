{{ config(severity='warn') }}
{#-
    Row changes without a key: their table's envelope carries no key (a Kafka Connect sink
    file, a Tencent message, a source table without a primary key) and the feed's
    meta.key_columns has no entry for it. They are logged but get no history. Returns one row
    per such table; fix by adding "database.table: [key columns]" to the feed's key_columns.
-#}
{%- set changed = changelake_relation_changed(ref('cdc_change_log')) %}
with

cdc_change_log as (
    select * from {{ ref('cdc_change_log') }}
),

final as (
    select
        feed,
        database_name,
        schema_name,
        table_name,
        count(*) as changes_without_key
    from cdc_change_log
    where
        {{ '' if changed else 'false and' }} kind = 'row'
        and key_json is null
    group by feed, database_name, schema_name, table_name
)

select * from final
