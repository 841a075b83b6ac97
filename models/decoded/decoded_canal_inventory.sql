{{ changelake_decoded('canal_inventory') }}
