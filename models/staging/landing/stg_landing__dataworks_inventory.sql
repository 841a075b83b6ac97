{{ changelake_staging('dataworks_inventory') }}
