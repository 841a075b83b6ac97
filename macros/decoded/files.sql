{#
    purpose: the landed files of the feed of `node` that no committed batch of this model has
    tried, as [path, size, modification time in epoch microseconds], by path. The folder is
    listed by the Python function changelake_landed_files (a local folder or any file system
    pyarrow.fs opens); the files tried are those with a marker row (landed_line null) in a
    committed batch.
#}
{% macro changelake_new_files(node) %}
    {%- set listed = changelake_list_feed_files(node) -%}
    {%- set tried = {} -%}
    {%- if is_incremental() and listed -%}
        {%- set query -%}
            -- every file tried has its marker row (landed_line null): those alone, not each line
            select landed_file, landed_file_size
            from {{ this }} as decoded
            where {{ changelake_committed_in_run('decoded', this.identifier) }}
                and decoded.landed_line is null
        {%- endset -%}
        {%- for row in run_query(query).rows -%}
            {%- do tried.update({row[0] ~ '#' ~ row[1]: true}) -%}
        {%- endfor -%}
    {%- endif -%}
    {%- set files = [] -%}
    {%- for file in listed if (file[0] ~ '#' ~ file[1]) not in tried -%}
        {%- do files.append(file) -%}
    {%- endfor -%}
    {{ return(files) }}
{% endmacro %}

{#
    purpose: the files in the folder of the feed of `node` now, as [path, size, modification
    time in epoch microseconds] by path; noted as this invocation's count of the feed's files
    (changelake_note_files_listed), which the feed health model and the warn test of feeds
    without files then read instead of listing the folder again
#}
{% macro changelake_list_feed_files(node) %}
    {%- set query = 'select landed_file, landed_file_size, landed_at_micros from changelake_landed_files('
        ~ changelake_feed_files_args(node) ~ ')' -%}
    {%- set listed = [] -%}
    {#- sorted here: an `order by` would have Spark sample the listing first, listing twice -#}
    {%- for row in run_query(query).rows | sort(attribute='0') -%}
        {%- do listed.append([row[0], row[1], row[2]]) -%}
    {%- endfor -%}
    {%- do changelake_note_files_listed(node.name, listed | length) -%}
    {{ return(listed) }}
{% endmacro %}


{# purpose: a Spark setting that is a size (`128MB`, `4m`, `2048`), in bytes #}
{% macro changelake_conf_bytes(conf) %}
    {%- set text = run_query('set ' ~ conf).rows[0][1] | string | lower -%}
    {%- set units = {'k': 1024, 'm': 1024 ** 2, 'g': 1024 ** 3, 't': 1024 ** 4, 'p': 1024 ** 5} -%}
    {%- set match = modules.re.fullmatch('([0-9]+)([kmgtp]?)b?', text) -%}
    {%- if match is none -%}
        {{ exceptions.raise_compiler_error(conf ~ " is '" ~ text ~ "', not a size in bytes") }}
    {%- endif -%}
    {{ return((match.group(1) | int) * units.get(match.group(2), 1)) }}
{% endmacro %}
