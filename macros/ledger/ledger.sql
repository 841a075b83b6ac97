{#
    The run ledger. Each incremental model owns a ledger table: one row per committed batch
    (kind 'batch'); for the change log and the history, one row per upstream batch consumed
    (kind 'consumed'); for the segmented tables, rows of the segments merges made and retired
    (kinds 'segment' and 'retired', macros/ledger/segments.sql). One writer per table: concurrent
    appends to one parquet table from one Spark application are not safe, and dbt runs models
    on several threads.

    Rows are written first, tagged with the run's batch id (dbt's invocation id); the ledger
    row last. A run killed anywhere before its ledger row is written leaves rows whose batch is
    not in the ledger: every reader ignores them, and the next run reads their input again.
    Parquet appends are not atomic; this makes them safe to repeat.

    Each commit appends one small file to the ledger's partition `segment = 'tail'`. So that
    the files every reader opens do not grow with the number of runs, the run's start
    compacts a ledger whose tail holds `max_tail` commits or more: its rows, once each, are
    written as one file in a new segment, then the other segments are dropped. A run killed in
    between leaves rows twice, which no reader minds: readers ask whether a batch is in the
    ledger, or read `changelake_ledger_rows` (each row once).
#}

{# purpose: the ledger relation of an incremental model (by its identifier) #}
{% macro changelake_ledger(model_identifier) %}
    {{ return(target.schema ~ '.changelake_ledger__' ~ model_identifier) }}
{% endmacro %}

{# purpose: SQL (a parenthesized select) of a model's ledger rows, each once #}
{% macro changelake_ledger_rows(model_identifier) %}
    {{ return('(select distinct kind, batch_id, committed_at, rows_written from '
        ~ changelake_ledger(model_identifier) ~ ')') }}
{% endmacro %}

{# purpose: the partition clause of an insert committing rows to a ledger #}
{% macro changelake_ledger_tail() %}
    {{ return("partition (segment = 'tail')") }}
{% endmacro %}

{# purpose: DDL creating a model's ledger when it does not exist #}
{% macro changelake_ledger_ddl(model_identifier) %}
    create table if not exists {{ changelake_ledger(model_identifier) }} (
        kind string,
        batch_id string,
        committed_at timestamp,
        rows_written bigint,
        segment string
    )
    using parquet
    partitioned by (segment)
{% endmacro %}

{# purpose: the partitions of a partitioned table, each a dict of column -> value #}
{% macro changelake_partitions(relation) %}
    {%- set specs = [] -%}
    {%- for row in run_query('show partitions ' ~ relation) -%}
        {%- set spec = {} -%}
        {%- for pair in row[0].split('/') -%}
            {%- set name_value = pair.split('=', 1) -%}
            {%- do spec.update({name_value[0]: name_value[1]}) -%}
        {%- endfor -%}
        {%- do specs.append(spec) -%}
    {%- endfor -%}
    {{ return(specs) }}
{% endmacro %}

{# purpose: drop the partitions `specs` (dicts of column -> value) of a table, in one statement #}
{% macro changelake_drop_partitions(relation, specs) %}
    {%- set clauses = [] -%}
    {%- for spec in specs -%}
        {%- set values = [] -%}
        {%- for column, value in spec.items() -%}
            {%- do values.append(column ~ ' = ' ~ changelake_literal(value)) -%}
        {%- endfor -%}
        {%- do clauses.append('partition (' ~ values | join(', ') ~ ')') -%}
    {%- endfor -%}
    {%- if clauses -%}
        {%- do run_query('alter table ' ~ relation ~ ' drop if exists ' ~ clauses | join(', ')) -%}
    {%- endif -%}
{% endmacro %}

{#
    purpose: commit this run's batch of an incremental model, `rows` rows written (the caller
    counted them after writing), and remember it for the invocation
    (`changelake_committed_now`); nothing is written when the batch holds no row: the ledger
    grows with batches, not with runs
#}
{% macro changelake_commit_rows(rows) %}
    {%- do changelake_insert_ledger_rows([['batch', invocation_id, rows]] if rows > 0 else []) -%}
    {%- do changelake_note_committed(rows) -%}
{% endmacro %}

{#
    purpose: append `ledger_rows` ([kind, batch_id, rows written] each) to this model's ledger
    tail in one single-file insert: all of them are recorded or none is; nothing when empty
#}
{% macro changelake_insert_ledger_rows(ledger_rows) %}
    {%- set values = [] -%}
    {%- for kind, batch_id, rows in ledger_rows -%}
        {%- do values.append('(' ~ changelake_literal(kind) ~ ', ' ~ changelake_literal(batch_id) ~ ', ' ~ (rows | int) ~ 'L)') -%}
    {%- endfor -%}
    {%- if values -%}
        {%- do run_query('insert into ' ~ changelake_ledger(this.identifier) ~ ' ' ~ changelake_ledger_tail()
            ~ ' select /*+ coalesce(1) */ kind, batch_id, current_timestamp() as committed_at, rows_written'
            ~ ' from values ' ~ values | join(', ') ~ ' as ledger_rows (kind, batch_id, rows_written)') -%}
    {%- endif -%}
{% endmacro %}
