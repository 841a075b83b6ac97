{{ changelake_staging('sqlserver_inventory') }}
