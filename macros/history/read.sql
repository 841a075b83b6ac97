{#
    purpose: SQL (a select) of the live frontier of the history store `relation` from the layers
    `layers` (from changelake_published_layers), its open versions (the part 'frontier'; the
    readers of the published frontier want those alone): the newest base's as they are stored
    when no layer came after it (the common case right after a compaction); otherwise those of
    the base and the later layers, less those a newer layer holds the key of, open or ended.
    The later layers are small: their keys are broadcast to the one scan of every open row, so
    nothing is exchanged or ranked.
#}
{% macro changelake_named_frontier(relation, layers) %}
    {%- set key = changelake_table_id() + ['key_json'] -%}
    {%- set frontier = layers | selectattr('has_live_frontier') | list -%}
    {%- set bases = frontier | selectattr('is_base') | list -%}
    {%- set deltas = frontier | rejectattr('is_base') | list -%}
    {%- if not deltas -%}
        {{ return(_changelake_named_frontier_rows(relation, bases)) }}
    {%- endif -%}
    select /*+ broadcast(newer) */ stored.*
    from ({{ _changelake_named_frontier_rows(relation, bases + deltas) }}) as stored
    left anti join (
        -- a key a later layer ended hides its open row in older layers
        select {{ key | join(', ') }}, layer_committed_at
        from ({{ _changelake_named_frontier_rows(relation, deltas, changelake_frontier_parts()) }}) as delta
    ) as newer
        on {{ changelake_same_table('stored', 'newer', key=true) }}
        and newer.layer_committed_at > stored.layer_committed_at
{% endmacro %}

{# purpose: SQL (a select) of the frontier rows of the parts `parts` of the layers `layers`, as the frontier gives them #}
{% macro _changelake_named_frontier_rows(relation, layers, parts=['frontier']) %}
    select stored.* except (part, layer), stored.layer.committed_at as layer_committed_at, stored.layer.is_base
    from ({{ changelake_named_layer_rows(relation, parts, layers) }}) as stored
{% endmacro %}

{#
    purpose: SQL (a select) of the live frontier of the history store `relation`: one row per
    key, from the newest layer holding the key (the live base is older than every live
    delta). One ranking over the base and the deltas together: ranking the deltas, then
    removing their keys from the base with a join, cost a second exchange of the rows. With
    `published`, the layers live now, named in the SQL, and the open versions alone
    (changelake_named_frontier); callers keep `is_current` rows, which the store read before
    its ledger existed gives with the others. With
    `keys` (the name of a relation of table id and key_json columns, few enough to broadcast:
    see changelake_history_plan), those keys' rows only: the keys are broadcast to the
    scan, so the other rows are dropped where they are read, before the ranking exchanges them.
    With `named` (layers from changelake_read_layers), the rows of those layers, named in the
    SQL, and not ranked when one of them alone holds frontier rows.
#}
{% macro changelake_history_frontier(relation, model_identifier='int_history_versions', published=false, keys=none, named=none) %}
    {%- if keys and published -%}
        {{ exceptions.raise_compiler_error('changelake_history_frontier: `keys` reads the store as the runs do, not as published') }}
    {%- endif -%}
    {%- set published_layers = changelake_published_layers(model_identifier) if published else none -%}
    {%- if published_layers is not none -%}
        {{ return(changelake_named_frontier(relation, published_layers)) }}
    {%- endif -%}
    {%- set key = changelake_table_id() + ['key_json'] -%}
    {#- a layer holds at most one frontier row per key: with one layer holding frontier rows,
        there is nothing to rank (and no exchange of the rows to rank them) -#}
    {%- set ranked = named is none or (named | selectattr('has_live_frontier') | list | length) > 1 -%}
    select * except (newness)
    from (
        select {{ '/*+ broadcast(' ~ keys ~ ') */' if keys else '' }}
            stored.* except (part, layer),
            stored.layer.committed_at as layer_committed_at,
            stored.layer.is_base,
            {%- if ranked %}
            row_number() over (
                partition by {{ key | join(', ') }} order by stored.layer.committed_at desc
            ) as newness
            {%- else %}
            1 as newness
            {%- endif %}
        from ({{ changelake_live_rows(relation, model_identifier, changelake_frontier_parts(), named=named) }}) as stored
        {%- if keys %}
        left semi join {{ keys }} on {{ changelake_same_table('stored', keys, key=true) }}
        {%- endif %}
        where stored.layer.has_live_frontier
    ) as ranked
    where newness = 1
{% endmacro %}

{#
    purpose: SQL (a select) of the live closed versions of the history store `relation`: closed
    rows of live layers that no later layer superseded. With `layers` (a SQL predicate over the
    `stored` row and its `layer`), those of the layers it selects, read without the others'
    rows: a compaction's selection is a suffix of the live layers (every layer after a selected
    one is selected too), and only a later layer supersedes, so nothing outside it matters.
    With `published`, the layers live now, named in the SQL (see changelake_published_layers),
    and their supersessions too where they are few (changelake_published_supersessions).
#}
{% macro changelake_history_closed(relation, model_identifier='int_history_versions', layers=none, published=false) %}
    {%- set named = changelake_published_layers(model_identifier) if published else none -%}
    {%- set supersessions = changelake_published_supersessions(relation, model_identifier) if named is not none else none -%}
    {%- if supersessions is not none and not layers %}
    select stored.* except (part, layer), stored.layer.committed_at as layer_committed_at
    from ({{ changelake_named_layer_rows(relation, ['closed'], named) }}) as stored
    where not {{ _changelake_superseded(supersessions) }}
    {%- else %}
    with

    stored as (
        select
            stored.* except (layer),
            stored.layer.committed_at as layer_committed_at
        from ({{ changelake_live_rows(relation, model_identifier, ['closed', 'superseded'], published) }}) as stored
        {%- if layers %}
        where {{ layers }}
        {%- endif %}
    ),

    superseded as (
        select * from stored where part = 'superseded'
    )

    select stored.* except (part)
    from stored
    left anti join superseded
        on {{ changelake_same_table('stored', 'superseded', key=true) }}
        and superseded.layer_committed_at > stored.layer_committed_at
    where stored.part = 'closed'
    {%- endif %}
{% endmacro %}

{#
    purpose: SQL (a select) of every version in the history store `relation` as published now
    (the layers live when the model calling this is built, see changelake_published_layers):
    its live closed versions and the open versions of its live frontier, the table id, key and
    version columns. Right after a compaction (no layer after the newest base) with few
    supersessions, one scan of the closed rows of every live layer and the base's frontier,
    each row kept or not by literals: nothing is joined or exchanged. Otherwise the closed
    versions (changelake_history_closed) and the open ones (changelake_history_frontier).
#}
{% macro changelake_history_versions(relation, model_identifier='int_history_versions') %}
    {%- set columns = changelake_table_id() + ['key_json'] + changelake_shown_version_columns() + changelake_parsed_columns() -%}
    {%- set layers = changelake_published_layers(model_identifier) -%}
    {%- set supersessions = changelake_published_supersessions(relation, model_identifier) -%}
    {%- set frontier = (layers or []) | selectattr('has_live_frontier') | list -%}
    {%- if supersessions is not none and frontier and frontier | rejectattr('is_base') | list | length == 0 %}
    select {{ columns | join(', ') }}
    from (
        select stored.*, {{ changelake_named_layer_struct(layers) }} as layer
        from {{ relation }} as stored
        {%- do changelake_note_named_layers(['closed'], layers) %}
        {%- do changelake_note_named_layers(['frontier'], frontier) %}
        where (stored.part = 'closed' and {{ changelake_named_layer_pick(layers) }})
            or (stored.part = 'frontier' and {{ changelake_named_layer_pick(frontier) }})
    ) as stored
    where case
        when stored.part = 'frontier' then stored.is_current
        else not {{ _changelake_superseded(supersessions) }}
    end
    {%- else %}
    select {{ columns | join(', ') }}
    from ({{ changelake_history_closed(relation, model_identifier, published=true) }}) as closed_versions
    union all
    select {{ columns | join(', ') }}
    from ({{ changelake_history_frontier(relation, model_identifier, published=true) }}) as frontier
    where is_current
    {%- endif %}
{% endmacro %}

{#
    purpose: SQL (a select) of the versions the layer `batch_id` of the history store `relation`
    wrote, as the history shows them: its closed rows and its open frontier rows (a frontier
    row closed by a delete is among its closed rows too). A build's data tests of cdc_history
    read these, the rows the build wrote (macros/materializations/test_scope.sql).
#}
{% macro changelake_history_layer_versions(relation, batch_id) %}
    {%- set columns = changelake_table_id() + ['key_json'] + changelake_shown_version_columns() + changelake_parsed_columns() -%}
    select {{ columns | join(', ') }}
    from {{ relation }} as stored
    where stored.batch_id = {{ changelake_literal(batch_id) }}
        and (stored.part = 'closed' or (stored.part = 'frontier' and stored.is_current))
{% endmacro %}

{#
    purpose: SQL (a select) of cdc_history's rows from `versions` (a select of the table id, key
    and version columns): the model's select over the published store, and a build's data tests'
    over the build's layer (changelake_history_layer_versions). With `open_only`, cdc_current's
    rows: the columns of an open version alone, from `versions` that are open.
#}
{% macro changelake_history_rows(versions, open_only=false) %}
with

versions as (
    select * from ({{ versions }}) as versions
),

final as (
    select
        -- ids
        feed,
        source_name,
        database_name,
        schema_name,
        table_name,
        key_json,
        {%- if not open_only %}
        version_number,
        {%- endif %}
        opening_change_id,
        {%- if not open_only %}
        closing_change_id,
        {%- endif %}
        -- strings
        row_json,
        valid_from_position,
        {%- if not open_only %}
        valid_to_position,
        opened_from_key_json,
        closed_into_key_json,
        {%- endif %}
        -- timestamps
        valid_from,
        {%- if not open_only %}
        valid_to,
        -- booleans
        is_current,
        is_deleted,
        {%- endif %}
        -- the key and the row as JSON objects (to_json renders them), as the store holds them
        key,
        row
    from versions
)

select * from final
{% endmacro %}

{#
    purpose: the supersessions among the layers live now (changelake_published_layers) that
    void rows of an older live layer, for a public view to apply as literals: a list of
    {table id columns, key_json, micros}, one per key, `micros` the commit time of the newest
    layer that superseded the key (the key's closed rows in older layers are void); none when
    more than `limit` keys are superseded (the view then anti-joins the superseded rows, a
    broadcast: a second query on every read) or the layers are not known. Late changes are
    rare, so the list is usually empty or short: a read of the view then scans the closed rows
    it returns and nothing else. Read once per invocation, from the superseded parts only. The
    var `changelake_history_supersession_literals` overrides `limit`.
#}
{% macro changelake_published_supersessions(relation, model_identifier, limit=100) %}
    {%- set limit = var('changelake_history_supersession_literals', limit) | int -%}
    {%- set layers = changelake_published_layers(model_identifier) -%}
    {%- if layers is none -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set memo = changelake_supersessions_memo() -%}
    {%- set memo_key = model_identifier -%}
    {%- if memo_key not in memo -%}
        {%- set table_id = changelake_table_id() -%}
        {%- set supersessions = [] -%}
        {#- the oldest live layer's supersessions void nothing live -#}
        {%- if layers | length > 1 -%}
            {%- set query -%}
                select {{ table_id | join(', ') }}, key_json, max(unix_micros(layer.committed_at))
                from ({{ changelake_named_layer_rows(relation, ['superseded'], layers[1:], note=false) }}) as stored
                group by {{ table_id | join(', ') }}, key_json
                limit {{ limit + 1 }}
            {%- endset -%}
            {%- for row in run_query(query).rows -%}
                {%- set supersession = {'key_json': row[table_id | length], 'micros': row[table_id | length + 1] | int} -%}
                {%- for column in table_id -%}
                    {%- do supersession.update({column: row[loop.index0]}) -%}
                {%- endfor -%}
                {%- do supersessions.append(supersession) -%}
            {%- endfor -%}
        {%- endif -%}
        {%- do memo.update({memo_key: supersessions if supersessions | length <= limit else none}) -%}
    {%- endif -%}
    {{ return(memo[memo_key]) }}
{% endmacro %}

{#
    purpose: SQL predicate: a `stored` closed row (with its `layer`) is void by one of the
    `supersessions` (from changelake_published_supersessions). The keys first, as one `in`
    list (a hash set past ten values), so a row whose key was never superseded is decided by
    one lookup; never null.
#}
{% macro _changelake_superseded(supersessions) %}
    {%- if not supersessions -%}
        {{ return('false') }}
    {%- endif -%}
    {%- set keys = [] -%}
    {%- set matches = [] -%}
    {%- for supersession in supersessions -%}
        {%- do keys.append(supersession.key_json) -%}
        {%- set match = ['stored.key_json = ' ~ changelake_literal(supersession.key_json)] -%}
        {%- for column in changelake_table_id() -%}
            {%- do match.append('stored.' ~ column ~ ' <=> ' ~ (changelake_literal(supersession[column])
                if supersession[column] is not none else 'null')) -%}
        {%- endfor -%}
        {%- do match.append('stored.layer.committed_at < timestamp_micros(' ~ supersession.micros ~ ')') -%}
        {%- do matches.append('(' ~ (match | join(' and ')) ~ ')') -%}
    {%- endfor -%}
    {{ return('coalesce(stored.key_json in ' ~ changelake_sql_list(keys | unique | list) ~ ' and ('
        ~ (matches | join('\n        or ')) ~ '), false)') }}
{% endmacro %}

{#
    purpose: the time a change opens or closes a version at (valid_from / valid_to), never
    null, so every version is found by an as-of read: the source commit time; for a snapshot
    read without one, the epoch (the row existed before the snapshot, since when is unknown;
    this keeps it before every streamed change, as its position does); otherwise the time the
    connector captured the change, the Kafka record's time, or when its file landed.
#}
{% macro changelake_version_time() %}
    {{- return("coalesce(committed_at, case when is_snapshot then timestamp_millis(0) end, "
        ~ "captured_at, kafka_timestamp, landed_at)") -}}
{% endmacro %}
