{#- The typed history of the Tencent feed's order lines: the format sends text values and no
    key, so the key comes from the feed's key_columns and every type from here. -#}
{{ changelake_typed_history(
    feed='tencent_inventory',
    source_table='inventory.order_lines',
    key=['order_number', 'line_number'],
    columns={
        'order_number': 'int',
        'line_number': 'int',
        'product_id': 'int',
        'quantity': 'int',
        'unit_price': 'decimal(10,2)',
    },
) }}
