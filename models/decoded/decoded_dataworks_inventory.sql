{{ changelake_decoded('dataworks_inventory') }}
