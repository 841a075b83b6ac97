{{ changelake_decoded('ogg_inventory') }}
