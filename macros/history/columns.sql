{# purpose: the parts holding the frontier: the open last versions, and the closed ones #}
{% macro changelake_frontier_parts() %}
    {{ return(['frontier', 'ended']) }}
{% endmacro %}

{#
    purpose: the store's columns after the version columns and `last_position`: the key and the
    row as VARIANT, parsed once when a layer is written (from `key_json` and `row_json`), so a
    read of cdc_current or cdc_history scans them as stored rather than parsing the JSON text
    of every row it returns
#}
{% macro changelake_parsed_columns() %}
    {{ return(['key', 'row']) }}
{% endmacro %}

{# purpose: the version columns, in the order of the table (after the table id and key) #}
{% macro changelake_version_columns() %}
    {{ return([
        'version_number', 'row_json', 'valid_from', 'valid_to', 'valid_from_position',
        'valid_to_position', 'is_current', 'is_deleted', 'opening_change_id', 'closing_change_id',
        'opened_from_key_json', 'closed_into_key_json', 'islands',
    ]) }}
{% endmacro %}

{# purpose: the version columns cdc_history shows (`islands` is the typed models' state, macros/typed/) #}
{% macro changelake_shown_version_columns() %}
    {{ return(changelake_version_columns() | reject('equalto', 'islands') | list) }}
{% endmacro %}

{# purpose: the Spark type of one version column (python_udfs.scd2.VERSION_FIELDS) #}
{% macro changelake_version_type(column) %}
    {%- set types = {
        'version_number': 'int', 'valid_from': 'timestamp', 'valid_to': 'timestamp',
        'is_current': 'boolean', 'is_deleted': 'boolean', 'islands': _changelake_islands_type(),
    } -%}
    {{ return(types.get(column, 'string')) }}
{% endmacro %}

{# purpose: the Spark type of a frontier state (one version) #}
{% macro changelake_state_type() %}
    {%- set fields = [] -%}
    {%- for column in changelake_version_columns() -%}
        {%- do fields.append(column ~ ': ' ~ changelake_version_type(column)) -%}
    {%- endfor -%}
    {{ return('struct<' ~ fields | join(', ') ~ '>') }}
{% endmacro %}

{# purpose: the Spark type of the history store's `islands` (python_udfs.scd2.VERSION_FIELDS) #}
{% macro _changelake_islands_type() %}
    {{- return('map<string, struct<row_json: string, valid_from: timestamp, valid_from_position: string, opening_change_id: string>>') -}}
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

    Before it, the rows are spread by partition (`changelake_layer_rebalance`).
#}
{% macro changelake_layer_order() %}
    {{- return('sort by batch_id, part, ' ~ (changelake_table_id() + ['key_json', 'version_number']) | join(', ')) -}}
{% endmacro %}

{#
    purpose: the hint of the select of every write to the history store: its rows spread by
    partition (batch_id, part) before the write's sort (`changelake_layer_order`), by Spark's
    REBALANCE, which adaptive execution sizes: a partition of a small layer goes to one task and
    is one file, where each task of the query before it wrote a file of every partition; a
    large one is split into tasks of about `spark.sql.adaptive.advisoryPartitionSizeInBytes`
    (64 MiB), each sorted (with `spark.sql.adaptive.enabled`, Spark's default: without it, a
    partition is one task whatever its size). A read of one key opens every file of the
    partitions it reads, so fewer files make it faster (docs/decisions.md).
#}
{% macro changelake_layer_rebalance() %}
    {{- return('/*+ rebalance(batch_id, part) */') -}}
{% endmacro %}
