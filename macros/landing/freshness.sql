{#
    purpose: `dbt source freshness` of a feed of the `landing` source: the newest modification
    time of the files in its folder, as changelake_landed_files lists them (no table stands over
    the folder); any other source as dbt reads it
#}
{% macro spark__collect_freshness(source, loaded_at_field, filter) %}
    {%- set found = namespace(feed=none) -%}
    {%- for node in changelake_landing_nodes() if node.identifier | lower == source.identifier | lower -%}
        {%- set found.feed = node -%}
    {%- endfor -%}
    {%- set feed = found.feed -%}
    {%- if feed is none -%}
        {{ return(dbt.default__collect_freshness(source, loaded_at_field, filter)) }}
    {%- endif -%}
    {%- call statement('collect_freshness', fetch_result=True, auto_begin=False) -%}
        select
            timestamp_micros(max(landed_at_micros)) as max_loaded_at,
            {{ current_timestamp() }} as snapshotted_at
        from changelake_landed_files({{ changelake_feed_files_args(feed) }})
    {%- endcall -%}
    {{ return(load_result('collect_freshness')) }}
{% endmacro %}
