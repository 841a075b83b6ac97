{#
    purpose: post-hook of a decoded model: commit this run's batch. One query over the batch
    (its own parquet files: the segment and batch filters skip the others) counts its rows and
    the files it tried that gave no line; each of those first gets its quarantine row (the
    marker's copy, with the reason) in the same batch and segment, then the ledger row is
    written with the rows counted (macros/ledger/ledger.sql). Nothing is written when the batch holds
    no row.
#}
{% macro changelake_commit_decoded_batch() %}
    {%- if not execute -%}
        {{ return('') }}
    {%- endif -%}
    {%- if changelake_batch_is_empty() -%}
        {#- no file to try: a batch of no rows, remembered so the change log knows it too -#}
        {%- do changelake_note_committed(0) -%}
        {{ return('') }}
    {%- endif -%}
    {%- set counted -%}
        select coalesce(sum(file_rows), 0) as batch_rows, count_if(not has_lines) as unreadable_files
        from (
            select count(*) as file_rows, bool_or(landed_line is not null) as has_lines
            from {{ this }}
            where {{ changelake_pending_rows([invocation_id]) }}
            group by landed_file, landed_file_size
        ) as files
    {%- endset -%}
    {%- set row = run_query(counted).rows[0] -%}
    {%- if row[1] > 0 -%}
        {%- do run_query(_changelake_quarantine_unreadable_files()) -%}
    {%- endif -%}
    {%- do changelake_commit_rows(row[0] + row[1]) -%}
    {{ return('') }}
{% endmacro %}

{#
    purpose: SQL adding one quarantine row (the marker's copy, with the reason) for each file
    this batch tried that gave no line
#}
{% macro _changelake_quarantine_unreadable_files() %}
    insert into {{ this }} by name
    select
        markers.* except (error_reason),
        'landed file could not be read, or holds no record: a compressed stream cut short or '
        || 'corrupt (a writer that died, or a file still being written), no permission to read '
        || 'it, or no non-empty line; it is tried again when its size changes' as error_reason
    from {{ this }} as markers
    where
        {{ changelake_pending_rows([invocation_id], 'markers') }}
        and markers.landed_line is null
        and markers.error_reason is null
        and not exists (
            select 1
            from {{ this }} as lines
            where
                {{ changelake_pending_rows([invocation_id], 'lines') }}
                and lines.landed_line is not null
                and lines.landed_file = markers.landed_file
                and lines.landed_file_size = markers.landed_file_size
        )
{% endmacro %}
