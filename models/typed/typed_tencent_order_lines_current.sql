{{ changelake_typed_current(ref('typed_tencent_order_lines_history')) }}
