{{ changelake_decoded('dtle_inventory_ddl') }}
