{#- The typed history of the PostgreSQL feed's customers: a new version only when a tracked
    column changes (an e-mail change alone does not open one). -#}
{{ changelake_typed_history(
    feed='pg_inventory',
    source_table='inventory.public.customers',
    key=['id'],
    columns={
        'id': 'int',
        'first_name': 'string',
        'last_name': 'string',
        'email': 'string',
        'is_active': 'boolean',
        'created_at': 'timestamp_ntz',
        'profile': 'string',
        'loyalty_tier': 'string',
    },
    tracked=['first_name', 'last_name', 'is_active', 'loyalty_tier'],
) }}
