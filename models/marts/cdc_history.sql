{#- the live closed versions and the open ones, as the history store holds them; a build's data
    tests read the same select over the build's own layer (macros/materializations/test_scope.sql) -#}
{{ changelake_history_rows(changelake_history_versions(ref('int_history_versions'))) }}
