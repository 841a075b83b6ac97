{{ changelake_staging('tencent_inventory') }}
