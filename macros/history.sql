{#
    The history store: SCD-2 versions kept as consumers read them, in layers.

    `int_history_versions` is an append-only parquet table partitioned by (batch_id, part). A
    run writes one layer (its batch id) holding, for the keys its new changes touch:

      part 'frontier'    each touched key's last version where it is open, and the last source
                         position seen for the key: the state the next run resumes from, and
                         the key's row in cdc_current
      part 'ended'       the same for each touched key whose last version is closed (by a
                         delete or a truncate): the state a run resumes from, never a row of
                         cdc_current, so that a read of the current state does not read the
                         keys that ended, which pile up with age where keys come and go
      part 'closed'      versions the run closed (or, for a re-folded key, all closed versions)
      part 'superseded'  one row per re-folded key: its closed rows in older layers are void
      part 'truncate'    the truncates the run logged, one row each

    Each frontier row also keeps, per typed model of its table, where the key's run of versions
    with equal tracked values began (`islands`, see python_udfs/scd2.py): the typed current
    models read it (macros/typed.sql), as cdc_current reads the frontier.

    A key whose new changes all come after everything seen for it (the normal case) resumes the
    fold from its frontier row: the run reads the new changes and the frontier, never the whole
    change log. A key with a change at or before its last seen position (late, re-sent, or
    before a truncate already applied) is re-folded from all its changes in the change log and
    its older closed rows are superseded. Either way the fold is the one `changelake_versions`
    UDF (python_udfs/scd2.py), so a run gives what a full refresh gives.

    A first build or a full refresh folds every key: its layer is committed as a base at once.
    Compaction (a post-hook, `changelake_compact_history`) writes a base layer: the live frontier
    (one row per key) and the live closed, superseded and truncate rows of the layers since the
    previous base, and of the newest older bases that hold few rows against those (so the bases
    stay logarithmic in number), and more while over three bases would stay live; the ledger
    row of kind 'base' makes it visible, rows of kind 'retired' retire the bases it merged, and
    the layers it replaces are dropped once no view names them (the public views name the live
    layers: _changelake_published_layers). Readers see: every live base layer's closed,
    superseded and truncate rows; the newest base layer's frontier; every layer committed after
    the newest base.
#}

{# purpose: the parts holding the frontier: the open last versions, and the closed ones #}
{% macro _changelake_frontier_parts() %}
    {{ return(['frontier', 'ended']) }}
{% endmacro %}

{# purpose: the columns identifying one source table #}
{% macro _changelake_table_id() %}
    {{ return(['feed', 'source_name', 'database_name', 'schema_name', 'table_name']) }}
{% endmacro %}

{# purpose: SQL join condition: `left` and `right` are the same source table (and key, with `key`) #}
{% macro _changelake_same_table(left, right, key=false) %}
    {%- set parts = [] -%}
    {%- for column in _changelake_table_id() -%}
        {%- do parts.append(left ~ '.' ~ column ~ ' <=> ' ~ right ~ '.' ~ column) -%}
    {%- endfor -%}
    {%- if key -%}
        {%- do parts.append(left ~ '.key_json = ' ~ right ~ '.key_json') -%}
    {%- endif -%}
    {{ return(parts | join(' and ')) }}
{% endmacro %}

{# purpose: a SQL list literal of text values, ('') when empty #}
{% macro _changelake_sql_list(values) %}
    {%- set quoted = [] -%}
    {%- for value in values -%}
        {%- do quoted.append(_changelake_literal(value)) -%}
    {%- endfor -%}
    {{ return('(' ~ (quoted | join(', ') if quoted else "''") ~ ')') }}
{% endmacro %}

{#
    purpose: the clause ending every write to the history store: each layer's rows in key order
    (table, key, version), within each partition (batch_id, part) the write makes. With the
    store's small row groups (`changelake_history_row_group_bytes`, the model's parquet
    option), a read of one key's history skips, by the row groups' min/max statistics of
    `key_json`, the rows of every other key in each file, where an unsorted file holds every
    key in every row group and prunes nothing. Spark writes a partitioned table sorted by its
    partition columns: the sort starts with them, so it is the write's sort (a sort not
    starting with them is replaced by Spark's). `batch_id` must reach it as a column of a union,
    not a literal projected over one: Spark folds a literal out of the sort, then finds the
    write's order unmet and sorts again by the partition columns alone.

    Before it, the rows are spread by partition (`_changelake_layer_rebalance`).
#}
{% macro _changelake_layer_order() %}
    {{- return('sort by batch_id, part, ' ~ (_changelake_table_id() + ['key_json', 'version_number']) | join(', ')) -}}
{% endmacro %}

{#
    purpose: the hint of the select of every write to the history store: its rows spread by
    partition (batch_id, part) before the write's sort (`_changelake_layer_order`), by Spark's
    REBALANCE, which adaptive execution sizes: a partition of a small layer goes to one task and
    is one file, where each task of the query before it wrote a file of every partition; a
    large one is split into tasks of about `spark.sql.adaptive.advisoryPartitionSizeInBytes`
    (64 MiB), each sorted (with `spark.sql.adaptive.enabled`, Spark's default: without it, a
    partition is one task whatever its size). A read of one key opens every file of the
    partitions it reads: over the store of the benchmark's age runs (four partitions read),
    one file a partition instead of two took such a read from 0.18 to 0.10 s; copying the
    store at 1M changes cost the same time either way (13.8 s).
#}
{% macro _changelake_layer_rebalance() %}
    {{- return('/*+ rebalance(batch_id, part) */') -}}
{% endmacro %}

{#
    purpose: the store's columns after the version columns and `last_position`: the key and the
    row as VARIANT, parsed once when a layer is written (from `key_json` and `row_json`), so a
    read of cdc_current or cdc_history scans them as stored rather than parsing the JSON text
    of every row it returns
#}
{% macro _changelake_parsed_columns() %}
    {{ return(['key', 'row']) }}
{% endmacro %}

{# purpose: the version columns, in the order of the table (after the table id and key) #}
{% macro _changelake_version_columns() %}
    {{ return([
        'version_number', 'row_json', 'valid_from', 'valid_to', 'valid_from_position',
        'valid_to_position', 'is_current', 'is_deleted', 'opening_change_id', 'closing_change_id',
        'opened_from_key_json', 'closed_into_key_json', 'islands',
    ]) }}
{% endmacro %}

{# purpose: the version columns cdc_history shows (`islands` is the typed models' state, macros/typed.sql) #}
{% macro _changelake_shown_version_columns() %}
    {{ return(_changelake_version_columns() | reject('equalto', 'islands') | list) }}
{% endmacro %}

{#
    purpose: SQL (a select) of the committed layers of the history store: batch_id,
    committed_at, is_base, has_live_frontier. Bases not retired and the batches after the
    newest base are live; of the bases only the newest one's frontier is. One scan of the
    ledger and one aggregate (its rows as one list, the retired bases, the newest base's time),
    then the live ones picked from the list: every read of the store runs this first, and
    reading the ledger once per fact (three scans, each with its distinct, and two joins) was
    most of what reading `cdc_current` cost.
#}
{% macro _changelake_live_layers(model_identifier) %}
    {%- set epoch = "timestamp '1970-01-01'" -%}
    select inline(transform(
        filter(
            ledger.entries,
            entry -> (entry.kind = 'base' and not array_contains(ledger.retired, entry.batch_id))
            or (entry.kind = 'batch' and entry.committed_at > coalesce(ledger.newest_base, {{ epoch }}))
        ),
        entry -> named_struct(
            'batch_id', entry.batch_id,
            'committed_at', entry.committed_at,
            'is_base', entry.kind = 'base',
            'has_live_frontier', entry.committed_at >= coalesce(ledger.newest_base, {{ epoch }})
        )
    ))
    from (
        select
            -- each row once (a ledger row can be stored twice, see changelake_ledger_rows)
            array_distinct(collect_list(struct(kind, batch_id, committed_at))) as entries,
            -- a base whose rows a later compaction copied into its own
            collect_set(case when kind = 'retired' then batch_id end) as retired,
            max(case when kind = 'base' then committed_at end) as newest_base
        from {{ changelake_ledger(model_identifier) }}
    ) as ledger
{% endmacro %}

{#
    purpose: SQL expression: the live layers of the history store as one scalar subquery, a map
    from batch id to (committed_at, is_base, has_live_frontier). Looked up per row
    (`try_element_at`, null for a layer that is not live), it costs one small query however
    often a query reads the store, where a join with `_changelake_live_layers` costs a shuffle
    or a broadcast each time (and the readers of the store read it several times over).
#}
{% macro _changelake_live_layer_map(model_identifier) %}
    (
        select map_from_entries(collect_list(struct(
            live_layers.batch_id,
            named_struct(
                'committed_at', live_layers.committed_at,
                'is_base', live_layers.is_base,
                'has_live_frontier', live_layers.has_live_frontier
            )
        )))
        from ({{ _changelake_live_layers(model_identifier) }}) as live_layers
    )
{% endmacro %}

{#
    purpose: SQL (a select) of the rows of the history store `relation` in live layers, parts
    `parts` only, with their layer (a struct: committed_at, is_base, has_live_frontier). With
    `published`, the layers live now, named in the SQL (see _changelake_published_layers); with
    `named`, the layers given (from _changelake_read_layers), named the same way.
#}
{% macro _changelake_live_rows(relation, model_identifier, parts, published=false, named=none) %}
    {%- set named = _changelake_published_layers(model_identifier) if published else named -%}
    {%- if named is not none -%}
        {{ return(_changelake_named_layer_rows(relation, parts, named)) }}
    {%- endif -%}
    select *
    from (
        select
            stored.*,
            try_element_at({{ _changelake_live_layer_map(model_identifier) }}, stored.batch_id) as layer
        from {{ relation }} as stored
        where stored.part in ('{{ parts | join("', '") }}')
    ) as stored
    where stored.layer is not null
{% endmacro %}

{#
    purpose: the layers of the history store `model_identifier` live now (read from its ledger
    when the model calling this is built), for a public view to name in its SQL: a list of
    {batch_id, micros (its commit time), is_base, has_live_frontier}, oldest first; none when
    not executing (parsing) or before the store's ledger exists (the view then reads the ledger
    on each read, as the models do).

    A view naming its layers reads their partitions alone (static pruning on literals) and no
    ledger, and needs no ranking of the frontier when no layer came after the newest base: its
    reads cost what a scan of the rows it returns costs. It stays right while the partitions it
    names exist, so a compaction drops the partitions it replaced only once no view names them
    (`_changelake_drop_dead_layers`): the views built after it name the new base, and the run's
    end drops the rest (`changelake_drop_unpublished_layers`). Until a view is built again it
    shows the store as of its last build: a run killed between the history and its views shows
    the run before, never half of one. Asked once per invocation (the views are built after the
    store, which is their only writer).
#}
{% macro _changelake_published_layers(model_identifier) %}
    {%- if not execute -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set memo = graph.setdefault('changelake_published_layers', {}) -%}
    {%- set memo_key = invocation_id ~ '/' ~ model_identifier -%}
    {%- if memo_key not in memo -%}
        {%- set ledger = changelake_ledger(model_identifier).split('.') -%}
        {%- if run_query("show tables in " ~ ledger[0] ~ " like '" ~ ledger[1] ~ "'").rows | length == 0 -%}
            {{ return(none) }}
        {%- endif -%}
        {%- do memo.update({memo_key: _changelake_read_layers(model_identifier)}) -%}
    {%- endif -%}
    {{ return(memo[memo_key]) }}
{% endmacro %}

{#
    purpose: the layers of the history store `model_identifier` live now, read from its ledger
    (which must exist): a list of {batch_id, micros (its commit time), is_base,
    has_live_frontier}, oldest first. The store's run reads them once when it is compiled and
    names them in its queries (the plan query and the insert): its reads of the store then
    prune its partitions by literals and hold no subquery of the ledger, which Spark would plan
    again in every place the query reads the store.
#}
{% macro _changelake_read_layers(model_identifier) %}
    {%- set query -%}
        select batch_id, unix_micros(committed_at), is_base, has_live_frontier
        from ({{ _changelake_live_layers(model_identifier) }}) as live_layers
        order by committed_at, batch_id
    {%- endset -%}
    {%- set layers = [] -%}
    {%- for row in run_query(query).rows -%}
        {%- do layers.append({'batch_id': row[0], 'micros': row[1] | int,
            'is_base': row[2], 'has_live_frontier': row[3]}) -%}
    {%- endfor -%}
    {{ return(layers) }}
{% endmacro %}

{#
    purpose: SQL (a select) of the rows of parts `parts` of the history store `relation` in the
    layers `layers` (from _changelake_published_layers or _changelake_read_layers), with their
    layer as a struct, as _changelake_live_rows gives them. The partitions are named by
    literals (an `or` of equalities: Spark prunes partitions by those, not by an `in` list of
    more than ten), and a comment says which, for `_changelake_layers_named_by_views`.
#}
{% macro _changelake_named_layer_rows(relation, parts, layers) %}
    select stored.*, {{ _changelake_named_layer_struct(layers) }} as layer
    from {{ relation }} as stored
    {{ _changelake_named_layer_comment(parts, layers) }}
    where stored.part in ('{{ parts | join("', '") }}')
        and {{ _changelake_named_layer_pick(layers) }}
{% endmacro %}

{# purpose: SQL expression: the layer of a `stored` row of the layers `layers`, as a struct (committed_at, is_base, has_live_frontier) #}
{% macro _changelake_named_layer_struct(layers) %}
    {%- set structs = [] -%}
    {%- for layer in layers -%}
        {%- do structs.append('when ' ~ _changelake_literal(layer.batch_id) ~ " then named_struct('committed_at', timestamp_micros("
            ~ layer.micros ~ "), 'is_base', " ~ (layer.is_base | string | lower) ~ ", 'has_live_frontier', "
            ~ (layer.has_live_frontier | string | lower) ~ ')') -%}
    {%- endfor -%}
    {%- if structs -%}
        {{ return('case stored.batch_id ' ~ (structs | join(' ')) ~ ' end') }}
    {%- endif -%}
    {{ return('cast(null as struct<committed_at: timestamp, is_base: boolean, has_live_frontier: boolean>)') }}
{% endmacro %}

{# purpose: SQL predicate: a `stored` row is of one of the layers `layers` (an `or` of literal equalities, which prune) #}
{% macro _changelake_named_layer_pick(layers) %}
    {%- set picks = [] -%}
    {%- for layer in layers -%}
        {%- do picks.append('stored.batch_id = ' ~ _changelake_literal(layer.batch_id)) -%}
    {%- endfor -%}
    {{ return('(' ~ (picks | join(' or ') if picks else 'false') ~ ')') }}
{% endmacro %}

{# purpose: the SQL comment saying which partitions a read names (found by _changelake_layers_named_by_views) #}
{% macro _changelake_named_layer_comment(parts, layers) %}
    {{- return('/* changelake reads parts (' ~ (parts | join(', ')) ~ ') of layers ('
        ~ (layers | map(attribute='batch_id') | join(', ')) ~ ') */') -}}
{% endmacro %}

{#
    purpose: SQL (a select) of the live frontier of the history store `relation` from the layers
    `layers` (from _changelake_published_layers), its open versions (the part 'frontier'; the
    readers of the published frontier want those alone): the newest base's as they are stored
    when no layer came after it (the common case right after a compaction); otherwise those of
    the base and the later layers, less those a newer layer holds the key of, open or ended.
    The later layers are small: their keys are broadcast to the one scan of every open row, so
    nothing is exchanged or ranked.
#}
{% macro _changelake_named_frontier(relation, layers) %}
    {%- set key = _changelake_table_id() + ['key_json'] -%}
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
        from ({{ _changelake_named_frontier_rows(relation, deltas, _changelake_frontier_parts()) }}) as delta
    ) as newer
        on {{ _changelake_same_table('stored', 'newer', key=true) }}
        and newer.layer_committed_at > stored.layer_committed_at
{% endmacro %}

{# purpose: SQL (a select) of the frontier rows of the parts `parts` of the layers `layers`, as the frontier gives them #}
{% macro _changelake_named_frontier_rows(relation, layers, parts=['frontier']) %}
    select stored.* except (part, layer), stored.layer.committed_at as layer_committed_at, stored.layer.is_base
    from ({{ _changelake_named_layer_rows(relation, parts, layers) }}) as stored
{% endmacro %}

{#
    purpose: SQL (a select) of the live frontier of the history store `relation`: one row per
    key, from the newest layer holding the key (the live base is older than every live
    delta). One ranking over the base and the deltas together: ranking the deltas, then
    removing their keys from the base with a join, cost a second exchange of the rows. With
    `published`, the layers live now, named in the SQL, and the open versions alone
    (_changelake_named_frontier); callers keep `is_current` rows, which the store read before
    its ledger existed gives with the others. With
    `keys` (the name of a relation of table id and key_json columns, few enough to broadcast:
    see _changelake_history_plan), those keys' rows only: the keys are broadcast to the
    scan, so the other rows are dropped where they are read, before the ranking exchanges them.
    With `named` (layers from _changelake_read_layers), the rows of those layers, named in the
    SQL, and not ranked when one of them alone holds frontier rows.
#}
{% macro changelake_history_frontier(relation, model_identifier='int_history_versions', published=false, keys=none, named=none) %}
    {%- if keys and published -%}
        {{ exceptions.raise_compiler_error('changelake_history_frontier: `keys` reads the store as the runs do, not as published') }}
    {%- endif -%}
    {%- set published_layers = _changelake_published_layers(model_identifier) if published else none -%}
    {%- if published_layers is not none -%}
        {{ return(_changelake_named_frontier(relation, published_layers)) }}
    {%- endif -%}
    {%- set key = _changelake_table_id() + ['key_json'] -%}
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
        from ({{ _changelake_live_rows(relation, model_identifier, _changelake_frontier_parts(), named=named) }}) as stored
        {%- if keys %}
        left semi join {{ keys }} on {{ _changelake_same_table('stored', keys, key=true) }}
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
    With `published`, the layers live now, named in the SQL (see _changelake_published_layers),
    and their supersessions too where they are few (_changelake_published_supersessions).
#}
{% macro changelake_history_closed(relation, model_identifier='int_history_versions', layers=none, published=false) %}
    {%- set named = _changelake_published_layers(model_identifier) if published else none -%}
    {%- set supersessions = _changelake_published_supersessions(relation, model_identifier) if named is not none else none -%}
    {%- if supersessions is not none and not layers %}
    select stored.* except (part, layer), stored.layer.committed_at as layer_committed_at
    from ({{ _changelake_named_layer_rows(relation, ['closed'], named) }}) as stored
    where not {{ _changelake_superseded(supersessions) }}
    {%- else %}
    with

    stored as (
        select
            stored.* except (layer),
            stored.layer.committed_at as layer_committed_at
        from ({{ _changelake_live_rows(relation, model_identifier, ['closed', 'superseded'], published) }}) as stored
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
        on {{ _changelake_same_table('stored', 'superseded', key=true) }}
        and superseded.layer_committed_at > stored.layer_committed_at
    where stored.part = 'closed'
    {%- endif %}
{% endmacro %}

{#
    purpose: SQL (a select) of every version in the history store `relation` as published now
    (the layers live when the model calling this is built, see _changelake_published_layers):
    its live closed versions and the open versions of its live frontier, the table id, key and
    version columns. Right after a compaction (no layer after the newest base) with few
    supersessions, one scan of the closed rows of every live layer and the base's frontier,
    each row kept or not by literals: nothing is joined or exchanged. Otherwise the closed
    versions (changelake_history_closed) and the open ones (changelake_history_frontier).
#}
{% macro changelake_history_versions(relation, model_identifier='int_history_versions') %}
    {%- set columns = _changelake_table_id() + ['key_json'] + _changelake_shown_version_columns() + _changelake_parsed_columns() -%}
    {%- set layers = _changelake_published_layers(model_identifier) -%}
    {%- set supersessions = _changelake_published_supersessions(relation, model_identifier) -%}
    {%- set frontier = (layers or []) | selectattr('has_live_frontier') | list -%}
    {%- if supersessions is not none and frontier and frontier | rejectattr('is_base') | list | length == 0 %}
    select {{ columns | join(', ') }}
    from (
        select stored.*, {{ _changelake_named_layer_struct(layers) }} as layer
        from {{ relation }} as stored
        {{ _changelake_named_layer_comment(['closed'], layers) }}
        {{ _changelake_named_layer_comment(['frontier'], frontier) }}
        where (stored.part = 'closed' and {{ _changelake_named_layer_pick(layers) }})
            or (stored.part = 'frontier' and {{ _changelake_named_layer_pick(frontier) }})
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
    read these, the rows the build wrote (macros/test_scope.sql).
#}
{% macro changelake_history_layer_versions(relation, batch_id) %}
    {%- set columns = _changelake_table_id() + ['key_json'] + _changelake_shown_version_columns() + _changelake_parsed_columns() -%}
    select {{ columns | join(', ') }}
    from {{ relation }} as stored
    where stored.batch_id = {{ _changelake_literal(batch_id) }}
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
    purpose: the supersessions among the layers live now (_changelake_published_layers) that
    void rows of an older live layer, for a public view to apply as literals: a list of
    {table id columns, key_json, micros}, one per key, `micros` the commit time of the newest
    layer that superseded the key (the key's closed rows in older layers are void); none when
    more than `limit` keys are superseded (the view then anti-joins the superseded rows, a
    broadcast: a second query on every read) or the layers are not known. Late changes are
    rare, so the list is usually empty or short: a read of the view then scans the closed rows
    it returns and nothing else. Read once per invocation, from the superseded parts only. The
    var `changelake_history_supersession_literals` overrides `limit`.
#}
{% macro _changelake_published_supersessions(relation, model_identifier, limit=100) %}
    {%- set limit = var('changelake_history_supersession_literals', limit) | int -%}
    {%- set layers = _changelake_published_layers(model_identifier) -%}
    {%- if layers is none -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set memo = graph.setdefault('changelake_published_supersessions', {}) -%}
    {%- set memo_key = invocation_id ~ '/' ~ model_identifier -%}
    {%- if memo_key not in memo -%}
        {%- set table_id = _changelake_table_id() -%}
        {%- set supersessions = [] -%}
        {#- the oldest live layer's supersessions void nothing live -#}
        {%- if layers | length > 1 -%}
            {%- set query -%}
                select {{ table_id | join(', ') }}, key_json, max(unix_micros(layer.committed_at))
                from ({{ _changelake_named_layer_rows(relation, ['superseded'], layers[1:]) }}) as stored
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
    `supersessions` (from _changelake_published_supersessions). The keys first, as one `in`
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
        {%- set match = ['stored.key_json = ' ~ _changelake_literal(supersession.key_json)] -%}
        {%- for column in _changelake_table_id() -%}
            {%- do match.append('stored.' ~ column ~ ' <=> ' ~ (_changelake_literal(supersession[column])
                if supersession[column] is not none else 'null')) -%}
        {%- endfor -%}
        {%- do match.append('stored.layer.committed_at < timestamp_micros(' ~ supersession.micros ~ ')') -%}
        {%- do matches.append('(' ~ (match | join(' and ')) ~ ')') -%}
    {%- endfor -%}
    {{ return('coalesce(stored.key_json in ' ~ _changelake_sql_list(keys | unique | list) ~ ' and ('
        ~ (matches | join('\n        or ')) ~ '), false)') }}
{% endmacro %}

{#
    purpose: the time a change opens or closes a version at (valid_from / valid_to), never
    null, so every version is found by an as-of read: the source commit time; for a snapshot
    read without one, the epoch (the row existed before the snapshot, since when is unknown;
    this keeps it before every streamed change, as its position does); otherwise the time the
    connector captured the change, the Kafka record's time, or when its file landed.
#}
{% macro _changelake_version_time() %}
    {{- return("coalesce(committed_at, case when is_snapshot then timestamp_millis(0) end, "
        ~ "captured_at, kafka_timestamp, landed_at)") -}}
{% endmacro %}

{#
    purpose: SQL (a select) of row changes as fold events: every keyed row change, and for an
    update that changed the key, a close of the old key into the new one.
#}
{% macro _changelake_row_events(changes) %}
    select
        {{ _changelake_table_id() | join(', ') }},
        key_json,
        change_id,
        op,
        position,
        kafka_partition,
        kafka_offset,
        row_index,
        {{ _changelake_version_time() }} as committed_at,
        after_json,
        unavailable_columns,
        linked_key_json
    from {{ changes }}
    where kind = 'row' and key_json is not null
    union all
    -- an update that changed the primary key also closes the old key, into the new one
    select
        {{ _changelake_table_id() | join(', ') }},
        linked_key_json as key_json,
        change_id,
        'd' as op,
        position,
        kafka_partition,
        kafka_offset,
        row_index,
        {{ _changelake_version_time() }} as committed_at,
        cast(null as string) as after_json,
        cast(null as array<string>) as unavailable_columns,
        key_json as linked_key_json
    from {{ changes }}
    where kind = 'row' and op = 'u' and linked_key_json is not null and key_json is not null
{% endmacro %}

{# purpose: SQL (a select) of the truncates among `changes`, as fold events without a key #}
{% macro _changelake_truncate_events(changes) %}
    select
        {{ _changelake_table_id() | join(', ') }},
        change_id,
        't' as op,
        position,
        kafka_partition,
        kafka_offset,
        row_index,
        {{ _changelake_version_time() }} as committed_at,
        cast(null as string) as after_json,
        cast(null as array<string>) as unavailable_columns,
        cast(null as string) as linked_key_json
    from {{ changes }}
    where kind = 'truncate'
{% endmacro %}

{# purpose: the struct of one fold event, as the changelake_versions UDF takes it #}
{% macro _changelake_fold_event(alias) %}
    struct(
        {{ alias }}.change_id, {{ alias }}.op, {{ alias }}.position, {{ alias }}.kafka_partition,
        {{ alias }}.kafka_offset, {{ alias }}.row_index, {{ alias }}.committed_at,
        {{ alias }}.after_json, {{ alias }}.unavailable_columns, {{ alias }}.linked_key_json
    )
{% endmacro %}

{#
    purpose: the body of the history store model: for the keys that newly committed change-log
    batches touch, the versions that change and each key's new frontier row (see above).
#}
{% macro changelake_versions_model(changes_model) %}
    {%- set incremental = is_incremental() -%}
    {%- set pending = _changelake_pending_batches(changes_model) if execute and incremental else [] -%}
    {%- set table_id = _changelake_table_id() -%}
    {%- set key = table_id + ['key_json'] -%}
    {%- if incremental and not pending -%}
        {#- nothing new: write nothing, read nothing, commit nothing (the hooks look for the
            marker; sqlfluff, rendering without executing, sees this file's macros only) -#}
        {{ return((_changelake_nothing_new() if execute else '') ~ '\nselect * from ' ~ this ~ ' where false') }}
    {%- endif -%}
    {#- the store's live layers, read once: the plan query and the insert name them -#}
    {%- set named = _changelake_read_layers(this.identifier) if execute and incremental else none -%}
    {%- set plan = _changelake_history_plan(changes_model, pending, named) if incremental else {'key_scan': false, 'any_late': true} -%}
    {%- set key_scan, any_late, any_truncate = plan['key_scan'], plan['any_late'], plan.get('any_truncate', true) -%}
    {#- late keys not counted before the run: the re-fold is in the query, on the late keys
        broadcast, and Spark drops it, unread, when they turn out to be none -#}
    {%- set late_at_run = plan.get('late_at_run', false) -%}
    {#- typed tables whose keys lack a typed model's start (macros/typed.sql): every key of them
        re-folded, so the frontier is joined whole -#}
    {%- set refold_tables = _changelake_typed_stale_tables(this, named) if execute and incremental else [] -%}
    {%- if refold_tables -%}
        {%- set key_scan, any_late, late_at_run = false, true, false -%}
    {%- endif -%}
    {%- set refold_hint = '/*+ broadcast(refold_keys) */' if late_at_run else '' -%}
{{ _changelake_full_fold() if execute and not incremental else '' }}
with

changes as (
    select * from {{ ref(changes_model) }} as logged
    where {{ changelake_committed_in_run('logged', changes_model, pending | list if incremental else none) }}
),

new_changes as (
    {%- if incremental %}
    -- the pending batches, found by literals (committed, since pending); named three times
    -- below: read once
    select * from {{ ref(changes_model) }} as logged
    where {{ changelake_pending_rows(pending, 'logged') }}
        and {{ changelake_computed_once() }}
    {%- else %}
    select * from changes
    {%- endif %}
),

new_events as (
    {{ _changelake_row_events('new_changes') }}
),

new_truncates as (
    {%- if any_truncate %}
    {{ _changelake_truncate_events('new_changes') }}
    {%- else %}
    -- the plan found no truncate in the pending batches: none, known when Spark plans the
    -- insert, so it drops every branch fed by truncates (a new truncate touches every key of
    -- its table: those branches read the whole frontier)
    select * from ({{ _changelake_truncate_events('new_changes') }}) as truncates
    where false
    {%- endif %}
),
{%- if incremental %}

{{ _changelake_history_classified(pending_events='new_events', pending_truncates='new_truncates', key_scan=key_scan, named=named, refold_tables=refold_tables) }}

-- keys whose new changes all come after what was seen: the new changes, from the frontier
resumed_events as (
    select
        {% for column in key %}classified.{{ column }}, {% endfor %}
        {{ _changelake_fold_event('new_events') }} as event
    from classified
    inner join new_events on {{ _changelake_same_table('classified', 'new_events', key=true) }}
    where not classified.is_late
    union all
    select
        {% for column in key %}classified.{{ column }}, {% endfor %}
        {{ _changelake_fold_event('new_truncates') }} as event
    from classified
    inner join new_truncates on {{ _changelake_same_table('classified', 'new_truncates') }}
    where not classified.is_late
),
{%- endif %}
{%- if any_late %}

-- keys folded from all their changes: every key in a full build, late keys in a run
refold_keys as (
    {%- if incremental %}
    select {{ key | join(', ') }} from classified where is_late
    {%- else %}
    select distinct {{ key | join(', ') }} from ({{ _changelake_row_events('changes') }}) as all_events
    {%- endif %}
),

all_truncates as (
    {{ _changelake_truncate_events('changes') }}
),

refold_events as (
    select {{ refold_hint }}
        {% for column in key %}all_events.{{ column }}, {% endfor %}
        {{ _changelake_fold_event('all_events') }} as event
    from ({{ _changelake_row_events('changes') }}) as all_events
    left semi join refold_keys on {{ _changelake_same_table('all_events', 'refold_keys', key=true) }}
    union all
    select {{ refold_hint }}
        {% for column in key %}refold_keys.{{ column }}, {% endfor %}
        {{ _changelake_fold_event('all_truncates') }} as event
    from refold_keys
    inner join all_truncates on {{ _changelake_same_table('refold_keys', 'all_truncates') }}
),
{%- endif %}

fold_inputs as (
    {%- if incremental %}
    select
        {% for column in key %}classified.{{ column }}, {% endfor %}
        classified.is_late,
        classified.state,
        classified.state_last_position,
        events.event
    from classified
    left join (
        select * from resumed_events
        {%- if any_late %}
        union all
        select * from refold_events
        {%- endif %}
    ) as events on {{ _changelake_same_table('classified', 'events', key=true) }}
    {%- else %}
    select
        {% for column in key %}refold_events.{{ column }}, {% endfor %}
        true as is_late,
        cast(null as {{ _changelake_state_type() }}) as state,
        cast(null as string) as state_last_position,
        refold_events.event
    from refold_events
    {%- endif %}
),

folded as (
    select
        {{ key | join(', ') }},
        is_late,
        changelake_versions(
            collect_list(event), if(is_late, null, first(state, true)), {{ _changelake_typed_tracked() }}
        ) as versions,
        first(state, true) as state,
        -- the last source position seen for the key (positions order one source's log)
        greatest(max(coalesce(event.position, '')), max(coalesce(state_last_position, ''))) as last_position
    from fold_inputs
    group by {{ key | join(', ') }}, is_late
),

{%- set version_columns = _changelake_version_columns() %}

-- each folded key's rows of the layer, from one pass over `folded`: its closed versions, its
-- frontier row and, where re-folded in a run, its superseded marker (one generate, so the fold
-- and everything under it is planned once, not once per part)
layer_rows as (
    select
        {% for column in key %}keyed.{{ column }},
        {% endfor -%}
        layer_row.*
    from (
        select
            *,
            -- the key's last version: the fold's, else (nothing opened) the one it resumed from
            coalesce(try_element_at(versions, -1), if(is_late, null, state)) as last_version
        from folded
    ) as keyed
    lateral view explode(concat(
        transform(
            filter(versions, version -> not version.is_current),
            version -> named_struct(
                {%- for column in version_columns %}
                '{{ column }}', version.{{ column }},
                {%- endfor %}
                'last_position', cast(null as string),
                'part', 'closed'
            )
        ),
        array(named_struct(
            {%- for column in version_columns %}
            '{{ column }}', keyed.last_version.{{ column }},
            {%- endfor %}
            'last_position', keyed.last_position,
            'part', if(keyed.last_version.is_current, 'frontier', 'ended')
        )),
        filter(
            array(named_struct(
                {%- for column in version_columns %}
                '{{ column }}', cast(null as {{ _changelake_version_type(column) }}),
                {%- endfor %}
                'last_position', cast(null as string),
                'part', 'superseded'
            )),
            -- a key re-folded in a run voids its closed rows in older layers
            superseded -> {{ 'keyed.is_late' if incremental else 'false' }}
        )
    )) as layer_row
),

layer_truncates as (
    select
        {% for column in table_id %}{{ column }},
        {% endfor -%}
        cast(null as string) as key_json,
        {%- for column in version_columns %}
        cast(null as {{ _changelake_version_type(column) }}) as {{ column }},
        {%- endfor %}
        position as last_position,
        'truncate' as part
    from new_truncates
),

{%- set columns = key + _changelake_version_columns() + ['last_position'] %}

-- the batch id in each branch of the union, so that the layer's key order is the write's
-- (_changelake_layer_order)
final as (
    select {{ columns | join(', ') }}, '{{ invocation_id }}' as batch_id, part from layer_rows
    union all
    select {{ columns | join(', ') }}, '{{ invocation_id }}' as batch_id, part from layer_truncates
)

select {{ _changelake_layer_rebalance() }}
    {{ columns | join(',\n    ') }},
    -- parsed here, once (_changelake_parsed_columns)
    parse_json(key_json) as key,
    parse_json(row_json) as row,
    batch_id,
    part
from final
{{ _changelake_layer_order() }}
{% endmacro %}

{#
    purpose: the comment marking a build of the history store that folds every key from all its
    changes (a first build, a full refresh): its one layer is what a compaction would write, so
    its commit makes it a base (changelake_commit_consuming_batch) and the next runs' deltas are
    compacted against it rather than copying it into a new base
#}
{% macro _changelake_full_fold() %}
    {{- return('/* changelake: a full fold, committed as a base */') -}}
{% endmacro %}

{# purpose: the Spark type of one version column (python_udfs.scd2.VERSION_FIELDS) #}
{% macro _changelake_version_type(column) %}
    {%- set types = {
        'version_number': 'int', 'valid_from': 'timestamp', 'valid_to': 'timestamp',
        'is_current': 'boolean', 'is_deleted': 'boolean', 'islands': _changelake_islands_type(),
    } -%}
    {{ return(types.get(column, 'string')) }}
{% endmacro %}

{# purpose: the Spark type of a frontier state (one version) #}
{% macro _changelake_state_type() %}
    {%- set fields = [] -%}
    {%- for column in _changelake_version_columns() -%}
        {%- do fields.append(column ~ ': ' ~ _changelake_version_type(column)) -%}
    {%- endfor -%}
    {{ return('struct<' ~ fields | join(', ') ~ '>') }}
{% endmacro %}

{#
    purpose: CTEs `frontier` (the live frontier of this model), `touched_frontier` (its rows of
    the touched keys; with `key_scan`, read for those keys alone, see
    _changelake_history_plan) and `classified`: every key the
    pending events or truncates touch, with its frontier row as `state`, and `is_late` when one
    of its new events is at or before a position already seen for the key or its table's
    truncates (it is then re-folded from all its changes). `named`: the store's live layers
    (from _changelake_read_layers), named in the reads of the store. `refold_tables` (from
    _changelake_typed_stale_tables): tables every live key of which is touched and late.
#}
{% macro _changelake_history_classified(pending_events, pending_truncates, key_scan=false, named=none, refold_tables=[]) %}
    {%- set table_id = _changelake_table_id() -%}
    {%- set key = table_id + ['key_json'] -%}
frontier as (
    {{ changelake_history_frontier(this, this.identifier, named=named) }}
),

old_truncates as (
    select
        {{ table_id | join(', ') }},
        max(last_position) as last_truncate_position
    from ({{ _changelake_live_rows(this, this.identifier, ['truncate'], named=named) }}) as stored
    group by {{ table_id | join(', ') }}
),

first_truncates as (
    select
        {{ table_id | join(', ') }},
        min(coalesce(position, '')) as first_position
    from {{ pending_truncates }}
    group by {{ table_id | join(', ') }}
),

touched as (
    select
        {{ key | join(', ') }},
        min(coalesce(position, '')) as first_position
    from {{ pending_events }}
    group by {{ key | join(', ') }}
    union all
    -- a new truncate touches every key of its table
    select
        {% for column in key %}frontier.{{ column }}, {% endfor %}
        first_truncates.first_position
    from frontier
    inner join first_truncates on {{ _changelake_same_table('frontier', 'first_truncates') }}
    {%- if refold_tables %}
    union all
    -- every live key of a table whose typed models' starts it lacks: re-folded (a first
    -- position before any, so late)
    select {{ key | join(', ') }}, '' as first_position
    from frontier
    where is_current and (
        {%- for table in refold_tables %}
        ({{ _changelake_typed_table(table.feed, table.source_table) }}){{ ' or' if not loop.last }}
        {%- endfor %}
    )
    {%- endif %}
),

touched_keys as (
    select
        {% for column in key %}touched.{{ column }}, {% endfor %}
        least(min(touched.first_position), min(first_truncates.first_position)) as first_position
    from touched
    left join first_truncates on {{ _changelake_same_table('touched', 'first_truncates') }}
    group by {% for column in key %}touched.{{ column }}{{ ", " if not loop.last }}{% endfor %}
),

-- the touched keys' frontier rows{{ ': read for those keys alone' if key_scan else '' }}
touched_frontier as (
    {{ changelake_history_frontier(this, this.identifier, keys='touched_keys' if key_scan else none, named=named) }}
),

-- named by the resumed events, the fold's inputs and the re-folded keys: computed once
classified as (
    select
        {% for column in key %}touched_keys.{{ column }}, {% endfor %}
        case when frontier.key_json is not null then named_struct(
            {%- for column in _changelake_version_columns() %}
            '{{ column }}', frontier.{{ column }}{{ "," if not loop.last }}
            {%- endfor %}
        ) end as state,
        frontier.last_position as state_last_position,
        coalesce(touched_keys.first_position <= frontier.last_position, false)
        or coalesce(touched_keys.first_position <= old_truncates.last_truncate_position, false)
            as is_late
    from touched_keys
    left join touched_frontier as frontier
        on {{ _changelake_same_table('touched_keys', 'frontier', key=true) }}
    left join old_truncates on {{ _changelake_same_table('touched_keys', 'old_truncates') }}
    where {{ changelake_computed_once() }}
),
{% endmacro %}

{#
    purpose: how the run reads, decided at compile time: {'key_scan': whether it may read the
    frontier for the keys it touches alone, 'any_late': whether any key of the pending
    change-log batches may need a re-fold from all its changes (when none does, the run does
    not read the change log's past at all), 'any_truncate': whether the pending batches hold a
    truncate (when none does, the run does not read the whole frontier), 'late_at_run' (when
    present and true): whether the late keys are left to the run's query to find}.
    With `key_scan`, the touched keys are broadcast to the frontier's scan (a hint), which drops
    the other rows where they are read instead of exchanging every row to join them. A
    broadcast is held whole in the driver's and every executor's memory, so only when the keys
    are known to be few: the pending batches hold at most `max_rows` rows (a var overrides it)
    and no truncate (a truncate touches every key of its table). Otherwise the frontier is
    joined as a whole, which scales with any number of keys.
    No query when the change log committed every pending batch in this invocation, its commit
    counting no truncate in them (the normal run), and their rows are few: then 'key_scan' and
    'late_at_run': the run's query holds the re-fold, over the change log's past, for its
    late keys broadcast; when they are none, Spark's adaptive execution finds the broadcast
    empty and drops the re-fold before it reads anything (tests/python/test_history.py checks
    the scans as they ran). That query's late keys cost no more than this plan's count of them
    did, a second pass over the pending changes and the frontier (2-3 s at a million changes).
    Otherwise one query answers both when the keys may be few: the pending truncates and the
    late keys of the pending row changes (a truncate's keys left out: with a truncate, the late
    keys are counted again, by a whole-frontier join). `named`: the store's live layers, as the
    run reads them (_changelake_read_layers).
#}
{% macro _changelake_history_plan(changes_model, pending, named, max_rows=1000000) %}
    {%- if not execute -%}
        {{ return({'key_scan': true, 'any_late': true, 'any_truncate': true}) }}
    {%- endif -%}
    {%- set max_rows = var('changelake_history_key_scan_rows', max_rows) -%}
    {#- the truncates of each pending batch the change log committed in this invocation, as its
        commit counted them (changelake_commit_consuming_batch) -#}
    {%- set noted = graph.get('changelake_truncates', {}) -%}
    {%- set truncates = [] -%}
    {%- for batch_id in pending if (changes_model ~ '/' ~ batch_id) in noted -%}
        {%- do truncates.append(noted[changes_model ~ '/' ~ batch_id]) -%}
    {%- endfor -%}
    {%- if (pending.values() | sum) <= max_rows and pending and truncates | length == pending | length
        and truncates | sum == 0 -%}
        {#- no truncate, keys few enough to broadcast: no query; the late keys are found by
            the run's own query -#}
        {{ return({'key_scan': true, 'any_late': true, 'any_truncate': false, 'late_at_run': true}) }}
    {%- endif -%}
    {%- if (pending.values() | sum) <= max_rows -%}
        {%- set row = run_query(_changelake_history_late_query(changes_model, pending, named, key_scan=true)).rows[0] -%}
        {%- if row[1] == 0 -%}
            {{ return({'key_scan': true, 'any_late': row[0] > 0, 'any_truncate': false}) }}
        {%- endif -%}
    {%- endif -%}
    {%- set row = run_query(_changelake_history_late_query(changes_model, pending, named, key_scan=false)).rows[0] -%}
    {{ return({'key_scan': false, 'any_late': row[0] > 0, 'any_truncate': row[1] > 0}) }}
{% endmacro %}

{#
    purpose: the query behind _changelake_history_plan: one row, the pending batches' late keys
    and their truncates. With `key_scan`, their truncates are left out of the late keys (their
    keys, every key of a table, are not broadcast).
#}
{% macro _changelake_history_late_query(changes_model, pending, named, key_scan) %}
    with

    -- pending batches are committed ones, each in its own live segment: named, they need no
    -- other filter
    changes as (
        select * from {{ ref(changes_model) }} as logged
        where {{ changelake_pending_rows(pending, 'logged') }}
    ),

    new_events as (
        {{ _changelake_row_events('changes') }}
    ),

    new_truncates as (
        select * from ({{ _changelake_truncate_events('changes') }}) as truncates
        {%- if key_scan %}
        where false
        {%- endif %}
    ),

    {{ _changelake_history_classified('new_events', 'new_truncates', key_scan, named) }}

    late as (
        select count_if(is_late) as late_keys from classified
    ),

    truncates as (
        select count_if(kind = 'truncate') as pending_truncates from changes
    )

    select late.late_keys, truncates.pending_truncates
    from late
    cross join truncates
{% endmacro %}

{#
    purpose: post-hook compacting the history store when the layers since the newest base
    number `max_layers` or more, or hold more than `max_share` of the base's rows: one base
    layer replaces them (see the top of this file). The newest older bases whose versions are
    few against what the new base takes in are merged into it too: going from the newest base
    back, a base is merged while it holds no more non-frontier rows than the deltas and the
    bases merged before it, so each base left holds more than all newer ones together and the
    store keeps a number of bases logarithmic in its versions (a version is copied about
    log2(versions) times in its life). At most `max_bases` bases stay live: where more would,
    the next newest ones are merged too. A read of one key's history opens the closed rows of
    every live base (a file or two each), and each costs the read a fixed ~15-20 ms (in the
    benchmark's age runs, a read opening 9 partitions took about twice one opening 3); the
    cap keeps that flat with age, and costs copies: a base the rule above would keep is
    merged once the cap is reached. One ledger insert (a single file) commits the new base
    (kind 'base') and retires the bases it merged (kind 'retired'); then every partition that
    is no longer live (replaced, or left by a killed run) and that no view names is dropped,
    the rest at the run's end, once the views name the new base.

    A store whose current state is small (the newest base's frontier and the layers since
    holding `small_rows` rows or fewer) is compacted after every run that wrote a layer,
    however many closed versions its age has gathered: such a compaction writes the frontier
    whole and the deltas' closed versions (an older base is merged only by the rule above), so
    it costs what the live rows cost, not what the store's age does. There a read of
    `cdc_current` or of one key's `cdc_history` over delta layers costs a second query (the
    deltas' keys, broadcast to the scan of the frontier) that about doubles it (0.17-0.21 s
    against 0.07-0.10 s over a 23,000-key frontier), while the compaction takes a second or
    two; over a large frontier a compaction costs more and the second query is a smaller part
    of a read. The vars `changelake_history_max_layers`, `changelake_history_max_share`,
    `changelake_history_small_rows` and `changelake_history_max_bases` override the four
    limits (a `small_rows` of 0: no store is small; `max_bases` is 1 or more).
#}
{% macro changelake_compact_history(max_layers=8, max_share=0.2, small_rows=100000, max_bases=3) %}
    {#- also after a run with nothing new: a compaction a killed run left undone is done then -#}
    {%- if not execute -%}
        {{ return('') }}
    {%- endif -%}
    {%- set max_layers = var('changelake_history_max_layers', max_layers) -%}
    {%- set max_share = var('changelake_history_max_share', max_share) -%}
    {%- set small_rows = var('changelake_history_small_rows', small_rows) -%}
    {%- set max_bases = var('changelake_history_max_bases', max_bases) -%}
    {%- set ledger = changelake_ledger_rows(this.identifier) -%}
    {%- set stats -%}
        with live_layers as ({{ _changelake_live_layers(this.identifier) }})
        select
            count_if(not live_layers.is_base) as delta_layers,
            coalesce(sum(case when not live_layers.is_base then ledger.rows_written end), 0) as delta_rows,
            coalesce(sum(case when live_layers.is_base and live_layers.has_live_frontier then ledger.rows_written end), 0) as base_rows,
            max(case when live_layers.is_base and live_layers.has_live_frontier then live_layers.batch_id end) as base_id
        from live_layers
        inner join {{ ledger }} as ledger
            on live_layers.batch_id = ledger.batch_id and ledger.kind in ('batch', 'base')
    {%- endset -%}
    {%- set row = run_query(stats).rows[0] -%}
    {%- set due = row[0] >= 1 and (row[0] >= max_layers or row[1] > max_share * row[2]) -%}
    {%- if row[0] >= 1 and not due and small_rows > 0 -%}
        {#- the newest base's frontier (the current versions as of that base): a count of one
            partition, read from the parquet footers -#}
        {%- set frontier_rows = 0 if row[3] is none else run_query(
            'select count(*) from ' ~ this ~ ' where batch_id = ' ~ _changelake_literal(row[3])
            ~ " and part = 'frontier'").rows[0][0] -%}
        {%- set due = row[1] + frontier_rows <= small_rows -%}
    {%- endif -%}
    {%- if due -%}
        {%- set layer = invocation_id ~ '-base' -%}
        {%- set bases = _changelake_bases_to_merge(max_bases) -%}
        {%- set merged = bases.merged -%}
        {%- set key = _changelake_table_id() + ['key_json'] -%}
        {%- set columns = key + _changelake_version_columns() + ['last_position'] + _changelake_parsed_columns() -%}
        {%- set merged_list = _changelake_sql_list(merged) -%}
        {%- set compaction -%}
            insert into {{ this }}
            with

            folded_layers as (
                select batch_id
                from ({{ _changelake_live_layers(this.identifier) }}) as live_layers
                where not live_layers.is_base or live_layers.batch_id in {{ merged_list }}
            ),

            -- the truncates (and, while older bases stay, the supersessions, which void
            -- versions in those) of the folded layers, as they are
            kept_rows as (
                select stored.*
                from {{ this }} as stored
                inner join folded_layers on stored.batch_id = folded_layers.batch_id
                where stored.part in ({{ "'superseded', 'truncate'" if bases.older_bases_stay else "'truncate'" }})
            ),

            closed as (
                select * except (layer_committed_at)
                from ({{ changelake_history_closed(this, this.identifier,
                    layers='(not stored.layer.is_base or stored.batch_id in ' ~ merged_list ~ ')') }}) as closed
            ),

            frontier as (
                select * except (layer_committed_at, is_base)
                from ({{ changelake_history_frontier(this, this.identifier) }}) as frontier
            )

            select {{ _changelake_layer_rebalance() }} *
            from (
                select {{ columns | join(', ') }}, '{{ layer }}' as batch_id, if(is_current, 'frontier', 'ended') as part from frontier
                union all
                select {{ columns | join(', ') }}, '{{ layer }}' as batch_id, 'closed' as part from closed
                union all
                select {{ columns | join(', ') }}, '{{ layer }}' as batch_id, part from kept_rows
            ) as base_rows
            {{ _changelake_layer_order() }}
        {%- endset -%}
        {%- do run_query(compaction) -%}
        {%- set commit -%}
            insert into {{ changelake_ledger(this.identifier) }} {{ changelake_ledger_tail() }}
            select /*+ coalesce(1) */ * from (
                select
                    'base' as kind,
                    '{{ layer }}' as batch_id,
                    current_timestamp() as committed_at,
                    count(*) as rows_written
                from {{ this }}
                where batch_id = '{{ layer }}'
                {%- for base in merged %}
                union all
                select 'retired', {{ _changelake_literal(base) }}, current_timestamp(), 0
                {%- endfor %}
            ) as ledger_rows
        {%- endset -%}
        {%- do run_query(commit) -%}
        {#- this run's own layer stays until the run's end: its versions and keys are what the
            run's data tests check (macros/test_scope.sql) -#}
        {%- do _changelake_drop_dead_layers(this, keep=[invocation_id]) -%}
    {%- endif -%}
    {{ return('select 1') }}
{% endmacro %}

{#
    purpose: the live bases a compaction due now merges into its new base, newest first (see
    changelake_compact_history), from the non-frontier rows of the live layers; and whether
    older bases stay live: {'merged': [batch ids], 'older_bases_stay': bool}. A base is merged
    while its rows are no more than those merged before it (the deltas' and the newer bases'),
    and while more than `max_bases` bases would stay live otherwise (the new one counted): the
    newest ones first, so what a compaction reads stays a suffix of the live layers.
#}
{% macro _changelake_bases_to_merge(max_bases) %}
    {%- if max_bases is not number or max_bases < 1 -%}
        {{ exceptions.raise_compiler_error(
            'changelake_history_max_bases must be a number of at least 1, not ' ~ max_bases) }}
    {%- endif -%}
    {%- set query -%}
        select
            live_layers.batch_id,
            live_layers.is_base,
            count(stored.part) as rows
        from ({{ _changelake_live_layers(this.identifier) }}) as live_layers
        left join (
            select batch_id, part from {{ this }} where part not in {{ _changelake_sql_list(_changelake_frontier_parts()) }}
        ) as stored on live_layers.batch_id = stored.batch_id
        group by live_layers.batch_id, live_layers.is_base, live_layers.committed_at
        order by live_layers.committed_at desc
    {%- endset -%}
    {%- set rows = run_query(query).rows -%}
    {%- set walk = namespace(rows=0, merging=true) -%}
    {%- for row in rows if not row[1] -%}
        {%- set walk.rows = walk.rows + row[2] -%}
    {%- endfor -%}
    {%- set bases = [] -%}
    {%- for row in rows if row[1] -%}
        {%- do bases.append(row) -%}
    {%- endfor -%}
    {%- set merged = [] -%}
    {%- for row in bases -%}
        {#- left unmerged, this base and every older one stay live, beside the new base -#}
        {%- set staying = (bases | length) - loop.index0 + 1 -%}
        {%- if walk.merging and (row[2] <= walk.rows or staying > max_bases) -%}
            {%- do merged.append(row[0]) -%}
            {%- set walk.rows = walk.rows + row[2] -%}
        {%- else -%}
            {%- set walk.merging = false -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return({'merged': merged, 'older_bases_stay': merged | length < bases | length}) }}
{% endmacro %}

{#
    purpose: drop the partitions of the history store `relation` that no reader sees any more:
    not live in its ledger (replaced by a compaction, or left by a killed run) and named by no
    view (`_changelake_layers_named_by_views`), except those of the batches `keep`
#}
{% macro _changelake_drop_dead_layers(relation, keep=[]) %}
    {%- set live -%}
        select batch_id, has_live_frontier from ({{ _changelake_live_layers(relation.identifier) }}) as live_layers
    {%- endset -%}
    {%- set live_frontier = {} -%}
    {%- for row in run_query(live).rows -%}
        {%- do live_frontier.update({row[0]: row[1]}) -%}
    {%- endfor -%}
    {%- set named = _changelake_layers_named_by_views(relation) -%}
    {%- set dead = [] -%}
    {%- for spec in _changelake_partitions(relation) if (spec.batch_id not in live_frontier
        or (spec.part in _changelake_frontier_parts() and not live_frontier[spec.batch_id]))
        and (spec.batch_id ~ '/' ~ spec.part) not in named and spec.batch_id not in keep -%}
        {%- do dead.append(spec) -%}
    {%- endfor -%}
    {%- do _changelake_drop_partitions(relation, dead) -%}
{% endmacro %}

{#
    purpose: the partitions of the history store `relation` that the stored text of a view built
    on it names (`_changelake_named_layer_rows` leaves a comment saying which), as
    'batch_id/part' texts: the views as they are now, whichever build made them. Views are
    found in the graph (the models built as views on the store); those not built are skipped.
#}
{% macro _changelake_layers_named_by_views(relation) %}
    {%- set views = [] -%}
    {%- for node in graph.nodes.values() if node.resource_type == 'model'
        and node.package_name == project_name and node.config.materialized == 'view' -%}
        {%- for parent in node.depends_on.nodes if parent.startswith('model.')
            and graph.nodes[parent].alias == relation.identifier -%}
            {%- do views.append(node.alias) -%}
        {%- endfor -%}
    {%- endfor -%}
    {%- set named = [] -%}
    {%- if not views -%}
        {{ return(named) }}
    {%- endif -%}
    {%- set pattern = 'changelake reads parts [(]([^)]*)[)] of layers [(]([^)]*)[)]' -%}
    {%- for row in run_query('show tables in ' ~ relation.schema ~ " like '" ~ (views | unique | join('|')) ~ "'") -%}
        {%- set text = run_query('show create table ' ~ relation.schema ~ '.' ~ row[1]).columns[0].values()[0] -%}
        {%- for match in modules.re.findall(pattern, text) -%}
            {%- for batch_id in match[1].split(', ') if batch_id -%}
                {%- for part in match[0].split(', ') -%}
                    {%- do named.append(batch_id ~ '/' ~ part) -%}
                {%- endfor -%}
            {%- endfor -%}
        {%- endfor -%}
    {%- endfor -%}
    {{ return(named) }}
{% endmacro %}

{#
    purpose: on-run-end: drop the history store's partitions that are dead and that no view
    names any more: those a compaction of this run replaced, once the views built after it name
    its base (or of an earlier run whose views were not built again until now). A `dbt build`
    or `dbt run` that created or changed a view only (a run that changes no view makes no
    partition unnamed), once the store exists.
#}
{% macro changelake_drop_unpublished_layers(model_identifier='int_history_versions') %}
    {%- if not execute or flags.WHICH not in ('build', 'run') or not changelake_views_written_now() -%}
        {{ return('') }}
    {%- endif -%}
    {%- set ledger = changelake_ledger(model_identifier).split('.') -%}
    {%- set tables = run_query("show tables in " ~ target.schema ~ " like '" ~ model_identifier ~ "|" ~ ledger[1] ~ "'") -%}
    {%- if tables.rows | length == 2 -%}
        {%- do _changelake_drop_dead_layers(api.Relation.create(
            schema=target.schema, identifier=model_identifier, type='table')) -%}
    {%- endif -%}
    {{ return('') }}
{% endmacro %}
