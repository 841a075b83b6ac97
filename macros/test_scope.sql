{#
    What a data test reads. `dbt test` (and any command with the var changelake_test_scope set
    to 'all') tests every row. `dbt build` and `dbt run` test what the run changed: a model whose
    stores (the incremental models it is computed from, nearest first) committed no batch in
    this invocation holds exactly what the last build tested, so its tests read an empty
    relation and pass at once. A run with nothing new therefore tests nothing again.
#}

{# purpose: dbt's test relation, emptied when this invocation changed nothing it is built from #}
{% macro spark__get_where_subquery(relation) -%}
    {%- set where = config.get('where', '') -%}
    {%- set unchanged = not changelake_relation_changed(relation) -%}
    {%- if unchanged or where -%}
        {%- set filtered -%}
            (select * from {{ relation }} where {{ 'false' if unchanged else where }}) dbt_subquery
        {%- endset -%}
        {{ return(filtered) }}
    {%- endif -%}
    {{ return(relation) }}
{%- endmacro %}

{# purpose: whether this invocation may have changed `relation` (true when unsure) #}
{% macro changelake_relation_changed(relation) %}
    {%- if not execute or flags.WHICH not in ('build', 'run')
        or var('changelake_test_scope', 'changed') == 'all' -%}
        {{ return(true) }}
    {%- endif -%}
    {%- set stores = _changelake_nearest_stores(relation.identifier) -%}
    {%- if stores is none -%}
        {{ return(true) }}
    {%- endif -%}
    {%- if not stores -%}
        {{ return(false) }}
    {%- endif -%}
    {%- for store in stores if _changelake_committed_now(store) -%}
        {{ return(true) }}
    {%- endfor -%}
    {{ return(false) }}
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
    purpose: whether the store `model_identifier` committed a batch in this invocation. Asked
    only by tests, which run after every model they read has finished, so the answer is final:
    it is remembered for the invocation (in the graph dict dbt shares between its nodes).
#}
{% macro _changelake_committed_now(model_identifier) %}
    {%- set memo = graph.setdefault('changelake_committed_now', {}) -%}
    {%- set key = invocation_id ~ '/' ~ model_identifier -%}
    {%- if key not in memo -%}
        {%- set query -%}
            select count(*) from {{ changelake_ledger(model_identifier) }}
            where batch_id = '{{ invocation_id }}'
        {%- endset -%}
        {%- do memo.update({key: run_query(query).columns[0].values()[0] > 0}) -%}
    {%- endif -%}
    {{ return(memo[key]) }}
{% endmacro %}

{#
    purpose: SQL predicate for a data test over an incremental model's rows: true under `dbt test`
    (or the var changelake_test_scope 'all'); in `dbt build`/`dbt run`, the rows this
    invocation appended (its batch_id)
#}
{% macro changelake_this_build_rows() %}
    {%- if execute and flags.WHICH in ('build', 'run')
        and var('changelake_test_scope', 'changed') != 'all' -%}
        {{ return("batch_id = '" ~ invocation_id ~ "'") }}
    {%- endif -%}
    {{ return('true') }}
{% endmacro %}
