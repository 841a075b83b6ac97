{{ changelake_staging('dtle_inventory_ddl') }}
