{{ changelake_decoded('dtle_inventory') }}
