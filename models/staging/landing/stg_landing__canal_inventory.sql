{{ changelake_staging('canal_inventory') }}
