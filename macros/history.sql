{#
    purpose: the body of the versions model: the SCD-2 versions of every key whose changes are
    new since the last run, recomputed from all of that key's changes.

    Each run appends, for every affected key (a key with a change in a newly committed change
    log batch, the old key of an update that changed the key, every key of a table with a new
    truncate), the key's complete version list, tagged with the run's batch id; `cdc_history`
    shows, per key, the versions of the latest committed batch. A late change therefore lands
    in its place and its neighbours are re-stitched; running again with nothing new adds
    nothing; a full refresh computes every key once, which is what the runs gave.
#}
{% macro changelake_versions_model(changes_model) %}
    {%- set pending = _changelake_pending_batches(changes_model) if execute and is_incremental() else [] -%}
    {%- set table_id = ['feed', 'source_name', 'database_name', 'schema_name', 'table_name'] %}
with

changes as (
    select * from {{ ref(changes_model) }} as logged
    where {{ changelake_committed('logged', changes_model) }}
),

row_changes as (
    select
        {{ table_id | join(', ') }},
        key_json,
        change_id,
        op,
        position,
        kafka_partition,
        kafka_offset,
        row_index,
        committed_at,
        after_json,
        unavailable_columns,
        linked_key_json,
        batch_id
    from changes
    where kind = 'row' and key_json is not null
    union all
    -- an update that changed the primary key also closes the old key, into the new one
    select
        {{ table_id | join(', ') }},
        linked_key_json as key_json,
        change_id,
        'd' as op,
        position,
        kafka_partition,
        kafka_offset,
        row_index,
        committed_at,
        cast(null as string) as after_json,
        cast(null as array<string>) as unavailable_columns,
        key_json as linked_key_json,
        batch_id
    from changes
    where kind = 'row' and op = 'u' and linked_key_json is not null and key_json is not null
),

truncates as (
    select
        {{ table_id | join(', ') }},
        change_id,
        position,
        kafka_partition,
        kafka_offset,
        row_index,
        committed_at,
        batch_id
    from changes
    where kind = 'truncate'
),

affected_keys as (
    select distinct
        {{ table_id | join(', ') }},
        key_json
    from row_changes
    {%- if is_incremental() %}
    where batch_id in ({% for b in pending %}'{{ b }}'{{ ", " if not loop.last }}{% else %}''{% endfor %})
    union
    -- a new truncate touches every key of its table
    select distinct
        {% for column in table_id %}row_changes.{{ column }}, {% endfor %}
        row_changes.key_json
    from row_changes
    inner join truncates
        on {% for column in table_id %}row_changes.{{ column }} <=> truncates.{{ column }}{{ " and " if not loop.last }}{% endfor %}
    where truncates.batch_id in ({% for b in pending %}'{{ b }}'{{ ", " if not loop.last }}{% else %}''{% endfor %})
    {%- endif %}
),

keyed_changes as (
    select row_changes.* except (batch_id)
    from row_changes
    left semi join affected_keys
        on {% for column in table_id %}row_changes.{{ column }} <=> affected_keys.{{ column }} and {% endfor %}row_changes.key_json = affected_keys.key_json
    union all
    -- every truncate of the table, for each affected key of it
    select
        {% for column in table_id %}affected_keys.{{ column }}, {% endfor %}
        affected_keys.key_json,
        truncates.change_id,
        't' as op,
        truncates.position,
        truncates.kafka_partition,
        truncates.kafka_offset,
        truncates.row_index,
        truncates.committed_at,
        cast(null as string) as after_json,
        cast(null as array<string>) as unavailable_columns,
        cast(null as string) as linked_key_json
    from affected_keys
    inner join truncates
        on {% for column in table_id %}affected_keys.{{ column }} <=> truncates.{{ column }}{{ " and " if not loop.last }}{% endfor %}
),

folded as (
    select
        {{ table_id | join(', ') }},
        key_json,
        changelake_versions(collect_list(struct(
            change_id, op, position, kafka_partition, kafka_offset, row_index, committed_at,
            after_json, unavailable_columns, linked_key_json
        ))) as versions
    from keyed_changes
    group by {{ table_id | join(', ') }}, key_json
),

final as (
    select
        {% for column in table_id %}folded.{{ column }},
        {% endfor -%}
        folded.key_json,
        version.*,
        '{{ invocation_id }}' as batch_id
    from folded
    lateral view explode(folded.versions) as version
)

select * from final
{% endmacro %}
