{#
    The state one dbt invocation passes between its nodes, all of it here.

    dbt runs the nodes of an invocation in one process and hands each the same `graph` dict; the
    project keeps one entry in it, a dict per invocation id (a `changelake server` process serves
    many invocations). Only the macros of this file touch that entry. Each pair of accessors says
    who writes a fact and who reads it. Facts of one node (a model's body found nothing new, a
    test reads nothing changed) are written while the node compiles and read while it executes:
    dbt compiles each node just before it runs it, in the same process.
#}

{# purpose: this invocation's state `name` (a dict, created empty); only this file calls it #}
{% macro _changelake_run_state(name) %}
    {%- set invocations = graph.setdefault('changelake_run_state', {}) -%}
    {{ return(invocations.setdefault(invocation_id, {}).setdefault(name, {})) }}
{% endmacro %}

{# purpose: the id of the node being compiled or run (a model, a test or a hook's model) #}
{% macro _changelake_node_id() %}
    {{ return(model.unique_id if model is mapping and model.get('unique_id') else this | string) }}
{% endmacro %}

{#- ---- one node's facts, from its compilation to its execution ---- -#}

{# purpose: a model's body found nothing new (no new landed file, no pending batch): its materialization and commit hooks skip the batch #}
{% macro changelake_note_nothing_new() %}
    {%- if execute -%}
        {%- do _changelake_run_state('nothing_new').update({_changelake_node_id(): true}) -%}
    {%- endif -%}
    {{ return('') }}
{% endmacro %}

{# purpose: whether this model's body found nothing new in this invocation (`changelake_note_nothing_new`) #}
{% macro changelake_batch_is_empty() %}
    {{ return(execute and _changelake_run_state('nothing_new').get(_changelake_node_id(), false)) }}
{% endmacro %}

{# purpose: the history store's body folds every key: its commit hook records the batch as a base layer #}
{% macro changelake_note_full_fold() %}
    {%- if execute -%}
        {%- do _changelake_run_state('full_fold').update({_changelake_node_id(): true}) -%}
    {%- endif -%}
    {{ return('') }}
{% endmacro %}

{# purpose: whether this model's body folded every key (`changelake_note_full_fold`) #}
{% macro changelake_is_full_fold() %}
    {{ return(execute and _changelake_run_state('full_fold').get(_changelake_node_id(), false)) }}
{% endmacro %}

{# purpose: the data test being compiled reads a relation this invocation did not change: it passes without a query (spark__get_test_sql) #}
{% macro changelake_note_test_unchanged() %}
    {%- if execute -%}
        {%- do _changelake_run_state('tests_unchanged').update({_changelake_node_id(): true}) -%}
    {%- endif -%}
    {{ return('') }}
{% endmacro %}

{# purpose: whether the data test being run reads only relations this invocation did not change #}
{% macro changelake_test_is_unchanged() %}
    {{ return(execute and _changelake_run_state('tests_unchanged').get(_changelake_node_id(), false)) }}
{% endmacro %}

{# purpose: the partitions of the history store the view being compiled names ('batch_id/part'), for its materialization to record on the view #}
{% macro changelake_note_view_reads(named) %}
    {%- if execute -%}
        {%- set reads = _changelake_run_state('view_reads').setdefault(_changelake_node_id(), []) -%}
        {%- do reads.extend(named | reject('in', reads) | list) -%}
    {%- endif -%}
{% endmacro %}

{# purpose: the partitions of the history store this view names (`changelake_note_view_reads`); none when it names none #}
{% macro changelake_view_reads() %}
    {{ return(_changelake_run_state('view_reads').get(_changelake_node_id())) }}
{% endmacro %}

{#- ---- the run: what its start found, what its models wrote and committed ---- -#}

{# purpose: what the run's start found in the ledgers (`changelake_maintain_ledgers`): {pending, live_segments} #}
{% macro changelake_note_run_start(facts) %}
    {%- do _changelake_run_state('run_start').update(facts) -%}
{% endmacro %}

{# purpose: what this invocation's start found in the ledgers (`changelake_note_run_start`); {} when it did not run #}
{% macro changelake_run_start() %}
    {{ return(_changelake_run_state('run_start')) }}
{% endmacro %}

{#
    purpose: remember that this model writes in this invocation (its materialization runs more
    than its hooks), so that what the run's start read of its ledger is asked again
#}
{% macro changelake_note_written() %}
    {%- do _changelake_run_state('written').update({this.identifier: true}) -%}
{% endmacro %}

{# purpose: whether any of `models` (identifiers) writes or wrote in this invocation #}
{% macro changelake_written_now(models) %}
    {%- set written = _changelake_run_state('written') -%}
    {{ return(models | select('in', written) | list | length > 0) }}
{% endmacro %}

{# purpose: remember that this model's table is built from scratch in this invocation (a first build or a full refresh): nothing from before it is live #}
{% macro changelake_note_rebuilt() %}
    {%- do _changelake_run_state('rebuilt').update({this.identifier: true}) -%}
{% endmacro %}

{# purpose: whether every one of `models` (identifiers) was built from scratch in this invocation (`changelake_note_rebuilt`) #}
{% macro changelake_rebuilt_now(models) %}
    {%- set rebuilt = _changelake_run_state('rebuilt') -%}
    {{ return(models | reject('in', rebuilt) | list | length == 0) }}
{% endmacro %}

{# purpose: remember that this model committed a batch of `rows` rows in this invocation (0: none) #}
{% macro changelake_note_committed(rows) %}
    {%- do _changelake_run_state('commits').update({this.identifier: rows | int}) -%}
{% endmacro %}

{#
    purpose: the batches `models` (identifiers) committed in this invocation, {model: {batch_id:
    rows}}, a model without one left out; none when one of them wrote in this invocation and
    did not say what it committed (`changelake_note_committed`: the decoded models' and the
    change log's commits do; a full fold's base is not noted)
#}
{% macro changelake_committed_now(models) %}
    {%- set written = _changelake_run_state('written') -%}
    {%- set commits = _changelake_run_state('commits') -%}
    {%- set out = {} -%}
    {%- for model in models if model in written -%}
        {%- if model not in commits -%}
            {{ return(none) }}
        {%- endif -%}
        {%- if commits[model] > 0 -%}
            {%- do out.update({model: {invocation_id: commits[model]}}) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(out) }}
{% endmacro %}

{# purpose: the change log's commit counted `count` truncates in its batch: the history's plan needs no query to know them #}
{% macro changelake_note_truncates(count) %}
    {%- do _changelake_run_state('truncates').update({this.identifier ~ '/' ~ invocation_id: count | int}) -%}
{% endmacro %}

{# purpose: the truncates each change-log batch committed in this invocation counted, {'model/batch_id': count} #}
{% macro changelake_truncates_now() %}
    {{ return(_changelake_run_state('truncates')) }}
{% endmacro %}

{# purpose: a decoded model listed `count` files in its feed's folder: the warn test of feeds without files does not list it again #}
{% macro changelake_note_files_listed(feed_node, count) %}
    {%- do _changelake_run_state('files_listed').update({feed_node: count}) -%}
{% endmacro %}

{# purpose: the files each feed's decoded model listed in this invocation, {landing node name: count} #}
{% macro changelake_files_listed() %}
    {{ return(_changelake_run_state('files_listed') if execute else {}) }}
{% endmacro %}

{# purpose: this invocation creates or changes a view: the run's end looks for partitions no view names any more #}
{% macro changelake_note_view_written() %}
    {%- do _changelake_run_state('views').update({'written': true}) -%}
{% endmacro %}

{# purpose: whether this invocation created or changed a view, as `changelake_note_view_written` noted #}
{% macro changelake_views_written_now() %}
    {{ return(_changelake_run_state('views').get('written', false)) }}
{% endmacro %}

{#- ---- answers of queries, asked once per invocation ---- -#}

{# purpose: each model's pending upstream batches, by 'model/prefix' (`changelake_pending_batches_by_model`) #}
{% macro changelake_pending_memo() %}
    {{ return(_changelake_run_state('pending')) }}
{% endmacro %}

{# purpose: the history store's live layers as the views name them, by store (`changelake_published_layers`) #}
{% macro changelake_published_layers_memo() %}
    {{ return(_changelake_run_state('published_layers')) }}
{% endmacro %}

{# purpose: the history store's live supersessions as the views name them, by store (`changelake_published_supersessions`) #}
{% macro changelake_supersessions_memo() %}
    {{ return(_changelake_run_state('published_supersessions')) }}
{% endmacro %}

{# purpose: whether each store committed a batch in this invocation, asked by the tests after it (`changelake_stores_now`) #}
{% macro changelake_store_commits_memo() %}
    {{ return(_changelake_run_state('store_commits')) }}
{% endmacro %}

{# purpose: whether each landing folder exists, asked by the feed health model and the test after it (`changelake_folders_exist`) #}
{% macro changelake_folders_memo() %}
    {{ return(_changelake_run_state('folders_exist')) }}
{% endmacro %}
