{#
    What a data test reads. `dbt test`, `--full-refresh` (every row is new) and any command with
    the var changelake_test_scope set to 'all' test every row. `dbt build` and `dbt run` test
    what the run changed:

    - a model whose stores (the incremental models it is computed from, nearest first)
      committed no batch in this invocation holds exactly what the last build tested: its tests
      pass without a query (`spark__get_test_sql`), so a run with nothing new tests nothing
      again;
    - a model computed from the history store alone (cdc_current, the typed tables) is tested
      on the keys this run's layer touched (every version of each, which the typed tables'
      per-key SCD-2 rules need: their versions are renumbered over the key's whole history);
      cdc_history's SCD-2 rules, its tests that check each row alone and the open versions
      that cdc_current must show read the versions the run's layer wrote (for a key the run
      resumed, from the version it resumed from when that was open, written again closed or
      still open; for a key it re-folded, every version), where the key filter makes Spark
      read the whole store; the older versions were tested by the builds that wrote them;
    - a model computed from the change log alone (cdc_change_log) on the changes this run
      logged (a duplicate of an older change shares its change_id, so `unique` still sees it);
      a test that checks each row alone (`not_null`, `accepted_values`) reads only the rows
      this run logged, by their partition, where the change_id scope reads the whole log;
    - any other model (the quarantine, the schema changes, the feed health), every row.
#}

{# purpose: dbt's test relation, narrowed to what this invocation changed (the top of this file) #}
{% macro spark__get_where_subquery(relation) -%}
    {%- set where = config.get('where', '') -%}
    {%- set scope = changelake_changed_rows(relation) -%}
    {%- if scope == 'false' -%}
        {#- nothing to read: noted, the test passes without a query (spark__get_test_sql) -#}
        {%- do changelake_note_test_unchanged() -%}
        {{ return('(select * from ' ~ relation ~ ' where false) dbt_subquery') }}
    {%- endif -%}
    {%- if scope != 'true' and relation.identifier == 'cdc_change_log' and _changelake_row_local_test() -%}
        {#- this run's rows of the log by their partition, not a change_id join over the whole log;
            the test runs only once the model committed them, so no ledger is read -#}
        {%- set logged = changelake_pending_rows([invocation_id], 'logged_changes') -%}
        {%- set rows -%}
            (select * from ({{ changelake_change_log_rows(target.schema ~ '.int_changes_unioned', logged) }}) as logged
            {%- if where %} where {{ where }}{% endif %}) dbt_subquery
        {%- endset -%}
        {{ return(rows) }}
    {%- endif -%}
    {%- if scope != 'true' and relation.identifier == 'cdc_history' and _changelake_layer_test() -%}
        {#- the versions this run's layer wrote, as cdc_history shows them; the layer stays until
            the run's end, though a compaction in this run replaced it (changelake_compact_history) -#}
        {%- set versions = changelake_history_layer_versions(target.schema ~ '.int_history_versions', invocation_id) -%}
        {%- set rows -%}
            (select * from ({{ changelake_history_rows(versions) }}) as layer_versions
            {%- if where %} where {{ where }}{% endif %}) dbt_subquery
        {%- endset -%}
        {{ return(rows) }}
    {%- endif -%}
    {%- set predicates = [where] if where else [] -%}
    {%- if scope != 'true' -%}
        {%- do predicates.append(scope) -%}
    {%- endif -%}
    {%- if predicates -%}
        {%- set filtered -%}
            (select * from {{ relation }} as changelake_scoped where {{ predicates | join(' and ') }}) dbt_subquery
        {%- endset -%}
        {{ return(filtered) }}
    {%- endif -%}
    {{ return(relation) }}
{%- endmacro %}

{#
    purpose: whether the test being compiled reads, in a build, the versions of cdc_history the
    run's layer wrote: the SCD-2 rules (per key, over consecutive versions: the layer holds a
    resumed key's versions from the one it resumed from), the open versions cdc_current must
    show (for the keys the run touched, which scope cdc_current), and the tests that check
    each row alone
#}
{% macro _changelake_layer_test() %}
    {%- set test = (model.get('test_metadata') or {}) if model is mapping else {} -%}
    {{ return(test.get('name') in ('scd2_rules', 'equals_open_versions') or _changelake_row_local_test()) }}
{% endmacro %}

{#
    purpose: whether the test being compiled checks each row alone (dbt's `not_null` and
    `accepted_values`): its result over a subset of the rows is its result over those rows
#}
{% macro _changelake_row_local_test() %}
    {%- set test = (model.get('test_metadata') or {}) if model is mapping else {} -%}
    {{ return(test.get('name') in ('not_null', 'accepted_values')) }}
{% endmacro %}

{#
    purpose: dbt's query of a test's failures. A test reading a relation this invocation did
    not change (marked by `spark__get_where_subquery`, or by a singular test that checks
    `changelake_relation_changed`) returns no row: it passes without a query of the relation,
    whose views Spark would otherwise analyse (a second or more for the views over every feed).
#}
{% macro spark__get_test_sql(main_sql, fail_calc, warn_if, error_if, limit) -%}
    {%- if changelake_test_is_unchanged() -%}
        select 0 as failures, false as should_warn, false as should_error
    {%- else -%}
        {{ default__get_test_sql(main_sql, fail_calc, warn_if, error_if, limit) }}
    {%- endif -%}
{%- endmacro %}

{# purpose: whether this invocation may have changed `relation` (true when unsure) #}
{% macro changelake_relation_changed(relation) %}
    {{ return(changelake_changed_rows(relation) != 'false') }}
{% endmacro %}

{#
    purpose: SQL predicate over the rows of `relation` this invocation may have changed: 'true'
    when unsure or when every row is tested, 'false' when none changed
#}
{% macro changelake_changed_rows(relation) %}
    {%- if not execute or flags.WHICH not in ('build', 'run') or flags.FULL_REFRESH
        or var('changelake_test_scope', 'changed') == 'all' -%}
        {#- a full refresh rewrote every row: narrowing to this run's rows would only add a join -#}
        {{ return('true') }}
    {%- endif -%}
    {%- set stores = _changelake_nearest_stores(relation.identifier) -%}
    {%- if stores is none -%}
        {{ return('true') }}
    {%- endif -%}
    {%- set now = changelake_stores_now(stores) -%}
    {%- if not now.committed -%}
        {{ return('false') }}
    {%- endif -%}
    {%- if now.only_now -%}
        {#- a first build: every row is this run's, narrowing would only add a join -#}
        {{ return('true') }}
    {%- endif -%}
    {%- set columns = changelake_documented_columns(relation.identifier) -%}
    {%- set table_key = changelake_table_id() + ['key_json'] -%}
    {%- if stores == ['int_history_versions'] and table_key | reject('in', columns) | list | length == 0 -%}
        {#- the rows of the keys the run's layer touched (its frontier parts hold one row per key), by
            table and key: a key_json alone is in many tables -#}
        {%- set same = ["changelake_layer.key_json = changelake_scoped.key_json"] -%}
        {%- for column in changelake_table_id() -%}
            {%- do same.append('changelake_layer.' ~ column ~ ' <=> changelake_scoped.' ~ column) -%}
        {%- endfor -%}
        {{ return('exists (select 1 from ' ~ target.schema ~ '.int_history_versions as changelake_layer where '
            ~ "changelake_layer.batch_id = " ~ changelake_literal(invocation_id)
            ~ ' and changelake_layer.part in ' ~ changelake_sql_list(changelake_frontier_parts())
            ~ ' and ' ~ same | join(' and ') ~ ')') }}
    {%- elif stores == ['int_history_versions'] and 'key_json' in columns -%}
        {{ return('key_json in (select key_json from ' ~ target.schema ~ ".int_history_versions where batch_id = '"
            ~ invocation_id ~ "')") }}
    {%- elif stores == ['int_changes_unioned'] and 'change_id' in columns -%}
        {{ return('change_id in (select change_id from ' ~ target.schema ~ '.int_changes_unioned where '
            ~ changelake_pending_rows([invocation_id]) ~ ')') }}
    {%- endif -%}
    {{ return('true') }}
{% endmacro %}

{#
    purpose: the incremental models of this project nearest upstream of the model aliased
    `identifier` (itself if incremental): what it is computed from besides sources and seeds.
    None when the model is not this project's or reads a source directly (it may change
    without a batch).
#}
{% macro _changelake_nearest_stores(identifier) %}
    {%- set start = [] -%}
    {%- for node in graph.nodes.values() if node.resource_type == 'model'
        and node.package_name == project_name and node.alias == identifier -%}
        {%- do start.append(node.unique_id) -%}
    {%- endfor -%}
    {%- if not start -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set stores = [] -%}
    {%- set seen = [] -%}
    {%- set walk = namespace(queue=start) -%}
    {#- breadth-first over the models it reads; Jinja has no while, the graph is finite -#}
    {%- for _ in range(graph.nodes | length) if walk.queue -%}
        {%- set next_queue = [] -%}
        {%- for unique_id in walk.queue if unique_id not in seen -%}
            {%- do seen.append(unique_id) -%}
            {%- set node = graph.nodes[unique_id] -%}
            {%- if node.config.materialized == 'incremental' -%}
                {%- do stores.append(node.alias) -%}
            {%- else -%}
                {%- for parent in node.depends_on.nodes -%}
                    {%- if not parent.startswith('model.') -%}
                        {%- do stores.append(none) -%}
                    {%- else -%}
                        {%- do next_queue.append(parent) -%}
                    {%- endif -%}
                {%- endfor -%}
            {%- endif -%}
        {%- endfor -%}
        {%- set walk.queue = next_queue -%}
    {%- endfor -%}
    {%- if none in stores -%}
        {{ return(none) }}
    {%- endif -%}
    {{ return(stores | unique | sort) }}
{% endmacro %}

{#
    purpose: what the ledgers of `stores` say of this invocation: `committed` (it committed a
    batch to one of them at least) and `only_now` (no batch, segment or base of another
    invocation is in any of them: a first build). Asked only by tests, which run after every
    model they read has finished, so the answers are final: they are remembered per store for
    the invocation (in the graph dict dbt shares between its nodes). When none of the stores
    ran more than its hooks in this invocation (`changelake_written_now`), none committed a
    batch, and no ledger is read.
#}
{% macro changelake_stores_now(stores) %}
    {%- if changelake_run_start() and not changelake_written_now(stores) -%}
        {#- none of them ran more than its hooks: none committed a batch -#}
        {{ return({'committed': false, 'only_now': false}) }}
    {%- endif -%}
    {%- set facts = changelake_store_commits_memo() -%}
    {%- set unknown = stores | reject('in', facts) | list -%}
    {%- if unknown -%}
        {%- set this_run = changelake_literal(invocation_id) -%}
        {%- set selects = [] -%}
        {%- for store in unknown -%}
            {%- do selects.append("select " ~ changelake_literal(store) ~ " as store, "
                ~ "count_if(batch_id = " ~ this_run ~ ") > 0 as committed, "
                ~ "count_if(batch_id != " ~ this_run ~ " and kind in ('batch', 'segment', 'base')) = 0 as only_now "
                ~ "from " ~ changelake_ledger(store)) -%}
        {%- endfor -%}
        {%- for row in run_query(selects | join(' union all ')) -%}
            {%- do facts.update({row[0]: {'committed': row[1], 'only_now': row[2]}}) -%}
        {%- endfor -%}
    {%- endif -%}
    {%- set now = namespace(committed=false, only_now=true) -%}
    {%- for store in stores -%}
        {%- set now.committed = now.committed or facts[store].committed -%}
        {%- set now.only_now = now.only_now and facts[store].only_now -%}
    {%- endfor -%}
    {{ return({'committed': now.committed, 'only_now': now.only_now}) }}
{% endmacro %}

{#
    purpose: SQL predicate for a data test over a segmented model's rows (or a view passing its
    segment and batch_id on): true under `dbt test` (or the var changelake_test_scope 'all');
    in `dbt build`/`dbt run`, the rows this invocation appended (its batch and segment)
#}
{% macro changelake_this_build_rows() %}
    {%- if execute and flags.WHICH in ('build', 'run')
        and var('changelake_test_scope', 'changed') != 'all' -%}
        {{ return(changelake_pending_rows([invocation_id])) }}
    {%- endif -%}
    {{ return('true') }}
{% endmacro %}
