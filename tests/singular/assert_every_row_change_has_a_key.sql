{{ config(severity='warn') }}
{#-
    Row changes without a key: their table's envelope carries no key (a Kafka Connect sink
    file, a Tencent message, a source table without a primary key) and the feed's key_columns
    has no entry for it. They are logged but get no history. Returns one row per such table;
    fix by adding "database.table: [key columns]" to the feed's key_columns. A build checks the
    changes it logged; `dbt test` (or the var changelake_test_scope 'all') checks every change.
-#}
with

int_changes_unioned as (
    select * from {{ ref('int_changes_unioned') }}
    where {{ changelake_this_build_rows() }}
),

final as (
    select
        feed,
        database_name,
        schema_name,
        table_name,
        count(*) as changes_without_key
    from int_changes_unioned
    where
        kind = 'row'
        and key_json is null
    group by feed, database_name, schema_name, table_name
)

select * from final
