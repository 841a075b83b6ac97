{#- The one list of feeds: every feed of the landing source, unioned in the common layout. -#}
{{ changelake_union_feeds([
    'pg_inventory',
    'sqlserver_inventory',
    'dtle_inventory',
    'dtle_inventory_ddl',
    'dataworks_inventory',
    'tencent_inventory',
    'canal_inventory',
    'maxwell_inventory',
    'ogg_inventory',
]) }}
