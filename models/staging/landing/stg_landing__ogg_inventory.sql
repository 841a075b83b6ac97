{{ changelake_staging('ogg_inventory') }}
