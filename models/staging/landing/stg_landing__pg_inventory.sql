{{ changelake_staging('pg_inventory') }}
