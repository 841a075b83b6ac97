{{ changelake_typed_current(ref('typed_pg_customers_history')) }}
