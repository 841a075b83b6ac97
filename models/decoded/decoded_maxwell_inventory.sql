{{ changelake_decoded('maxwell_inventory') }}
