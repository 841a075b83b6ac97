{{ changelake_staging('dtle_inventory') }}
