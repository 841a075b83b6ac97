{{ changelake_decoded('sqlserver_inventory') }}
