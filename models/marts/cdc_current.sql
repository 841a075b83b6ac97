{#- one row per live key: the history store's frontier holds each key's last version, so read
    it, not the history; the columns of an open version, as cdc_history gives them -#}
{%- set open_versions -%}
    select * from ({{ changelake_history_frontier(ref('int_history_versions'), published=true) }}) as frontier
    where is_current
{%- endset -%}
{{ changelake_history_rows(open_versions, open_only=true) }}
