{{ config(pre_hook="refresh table {{ source('landing', 'pg_inventory') }}") }}

{{ changelake_decoded('pg_inventory') }}
