{#- every committed change of the change log store; the select is `changelake_change_log_rows`
    (macros/change_log/), which the data tests of one build's rows reuse -#}
{{ changelake_change_log_rows(
    ref('int_changes_unioned'),
    changelake_committed('logged_changes', 'int_changes_unioned'),
) }}
