{{ changelake_decoded('tencent_inventory') }}
