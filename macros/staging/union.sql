{#
    purpose: union the staging views of `feeds`, failing at compile time when there is none, or
    when the list and the `landing` source disagree (a feed declared but not listed, or listed
    but not declared).
#}
{% macro changelake_union_feeds(feeds) %}
    {%- if execute -%}
        {%- if not feeds -%}
            {{ exceptions.raise_compiler_error(
                "no feed is configured: declare one under feeds: in seeds/changelake.yml (README: "
                ~ "Your own feeds and typed tables), or build the demo's feeds (var changelake_demo: true)") }}
        {%- endif -%}
        {%- set declared = changelake_landing_nodes() | map(attribute='name') | list -%}
        {%- set missing = declared | reject('in', feeds) | list -%}
        {%- set unknown = feeds | reject('in', declared) | list -%}
        {%- if missing or unknown -%}
            {{ exceptions.raise_compiler_error(
                "the feeds listed in " ~ this.identifier ~ " and the landing source differ: "
                ~ "not listed: " ~ (missing | join(', ') or 'none') ~ "; not declared: "
                ~ (unknown | join(', ') or 'none')) }}
        {%- endif -%}
    {%- endif %}
with
{% for feed in feeds %}
stg_landing__{{ feed }} as (
    select * from {{ ref('stg_landing__' ~ feed) }}
),
{% endfor %}
unioned as (
    {%- for feed in feeds %}
    select * from stg_landing__{{ feed }}
    {%- if not loop.last %}
    union all
    {%- endif %}
    {%- endfor %}
)

select * from unioned
{% endmacro %}
