{{ changelake_staging('maxwell_inventory') }}
