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
    models read it (macros/typed/), as cdc_current reads the frontier.

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
    layers: changelake_published_layers). Readers see: every live base layer's closed,
    superseded and truncate rows; the newest base layer's frontier; every layer committed after
    the newest base.
#}

{#
    purpose: SQL (a select) of the committed layers of the history store: batch_id,
    committed_at, is_base, has_live_frontier. Bases not retired and the batches after the
    newest base are live; of the bases only the newest one's frontier is. One scan of the
    ledger and one aggregate (its rows as one list, the retired bases, the newest base's time),
    then the live ones picked from the list: every read of the store runs this first, and
    reading the ledger once per fact (three scans, each with its distinct, and two joins) was
    most of what reading `cdc_current` cost.
#}
{% macro changelake_live_layers(model_identifier) %}
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
    often a query reads the store, where a join with `changelake_live_layers` costs a shuffle
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
        from ({{ changelake_live_layers(model_identifier) }}) as live_layers
    )
{% endmacro %}

{#
    purpose: SQL (a select) of the rows of the history store `relation` in live layers, parts
    `parts` only, with their layer (a struct: committed_at, is_base, has_live_frontier). With
    `published`, the layers live now, named in the SQL (see changelake_published_layers); with
    `named`, the layers given (from changelake_read_layers), named the same way.
#}
{% macro changelake_live_rows(relation, model_identifier, parts, published=false, named=none) %}
    {%- set named = changelake_published_layers(model_identifier) if published else named -%}
    {%- if named is not none -%}
        {{ return(changelake_named_layer_rows(relation, parts, named)) }}
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
    (`changelake_drop_dead_layers`): the views built after it name the new base, and the run's
    end drops the rest (`changelake_drop_unpublished_layers`). Until a view is built again it
    shows the store as of its last build: a run killed between the history and its views shows
    the run before, never half of one. Asked once per invocation (the views are built after the
    store, which is their only writer).
#}
{% macro changelake_published_layers(model_identifier) %}
    {%- if not execute -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set memo = changelake_published_layers_memo() -%}
    {%- set memo_key = model_identifier -%}
    {%- if memo_key not in memo -%}
        {%- set ledger = changelake_ledger(model_identifier).split('.') -%}
        {%- if run_query("show tables in " ~ ledger[0] ~ " like '" ~ ledger[1] ~ "'").rows | length == 0 -%}
            {{ return(none) }}
        {%- endif -%}
        {%- do memo.update({memo_key: changelake_read_layers(model_identifier)}) -%}
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
{% macro changelake_read_layers(model_identifier) %}
    {%- set query -%}
        select batch_id, unix_micros(committed_at), is_base, has_live_frontier
        from ({{ changelake_live_layers(model_identifier) }}) as live_layers
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
    layers `layers` (from changelake_published_layers or changelake_read_layers), with their
    layer as a struct, as changelake_live_rows gives them. The partitions are named by
    literals (an `or` of equalities: Spark prunes partitions by those, not by an `in` list of
    more than ten). Unless `note` is false (a query run while compiling, not the node's SQL),
    the partitions are noted for the node being compiled: a view records them
    (`changelake_record_view_reads`).
#}
{% macro changelake_named_layer_rows(relation, parts, layers, note=true) %}
    {%- if note -%}
        {%- do changelake_note_named_layers(parts, layers) -%}
    {%- endif %}
    select stored.*, {{ changelake_named_layer_struct(layers) }} as layer
    from {{ relation }} as stored
    where stored.part in ('{{ parts | join("', '") }}')
        and {{ changelake_named_layer_pick(layers) }}
{% endmacro %}

{# purpose: SQL expression: the layer of a `stored` row of the layers `layers`, as a struct (committed_at, is_base, has_live_frontier) #}
{% macro changelake_named_layer_struct(layers) %}
    {%- set structs = [] -%}
    {%- for layer in layers -%}
        {%- do structs.append('when ' ~ changelake_literal(layer.batch_id) ~ " then named_struct('committed_at', timestamp_micros("
            ~ layer.micros ~ "), 'is_base', " ~ (layer.is_base | string | lower) ~ ", 'has_live_frontier', "
            ~ (layer.has_live_frontier | string | lower) ~ ')') -%}
    {%- endfor -%}
    {%- if structs -%}
        {{ return('case stored.batch_id ' ~ (structs | join(' ')) ~ ' end') }}
    {%- endif -%}
    {{ return('cast(null as struct<committed_at: timestamp, is_base: boolean, has_live_frontier: boolean>)') }}
{% endmacro %}

{# purpose: SQL predicate: a `stored` row is of one of the layers `layers` (an `or` of literal equalities, which prune) #}
{% macro changelake_named_layer_pick(layers) %}
    {%- set picks = [] -%}
    {%- for layer in layers -%}
        {%- do picks.append('stored.batch_id = ' ~ changelake_literal(layer.batch_id)) -%}
    {%- endfor -%}
    {{ return('(' ~ (picks | join(' or ') if picks else 'false') ~ ')') }}
{% endmacro %}

{# purpose: note the partitions `parts` of the layers `layers` as named by the SQL of the node being compiled #}
{% macro changelake_note_named_layers(parts, layers) %}
    {%- set named = [] -%}
    {%- for layer in layers -%}
        {%- for part in parts -%}
            {%- do named.append(layer.batch_id ~ '/' ~ part) -%}
        {%- endfor -%}
    {%- endfor -%}
    {%- do changelake_note_view_reads(named) -%}
{% endmacro %}
