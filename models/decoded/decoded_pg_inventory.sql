{{ changelake_decoded('pg_inventory') }}
