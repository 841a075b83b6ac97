"""The benchmark: ChangeLake's decode and pipeline speed against native Spark, in one run.

``changelake bench [--events N] [--large] [--rounds R] [--write-docs]``

Modules, one a section: :mod:`~python_udfs.bench.decode`, :mod:`~python_udfs.bench.pipeline`,
:mod:`~python_udfs.bench.large`, :mod:`~python_udfs.bench.age`,
:mod:`~python_udfs.bench.peer`, and
:mod:`~python_udfs.bench.report` (the page); :mod:`~python_udfs.bench.cli` runs them in order.

All measurements run in one process on one SparkSession (the embedded target unless another is
chosen), on data from :mod:`python_udfs.generator`:

1. **Decode** of the Debezium PostgreSQL feed (``--events`` records, schema blocks included):
   the floor (read the landed lines, write them to Spark's ``noop`` sink), the best native
   path (``from_json`` with an explicit schema plus SQL expressions for the same conversions:
   base64 decimals, micro timestamps, epoch dates, TOAST markers, key JSON, position), the
   transfer (the records to the Python workers and results of the decode's size back, no
   decoding) and the ChangeLake UDF; medians of ``--rounds``. The same over the same
   records without schema blocks (``schemas.enable=false``: key and value their ``payload``
   alone, values as sent). Where the UDF's Python time goes, per record, in this process.
   Then the UDF per feed (all six formats).
2. **End to end**: every model (``dbt build`` without the accounting test) from scratch over
   all six feeds, events/s and seconds per layer; the accounting test timed on its own.
3. **Incremental**: the generator's last batch (1% of the changes, late files included) is
   landed after the first build and built incrementally; its seconds over a full refresh's.
4. **Memory**: peak resident memory of the JVM, the Python UDF workers and this driver, for
   the end-to-end run at ``events / 10`` and at ``events``.
5. **Large files**: one landed file of 100 MB and one of 1 GB, in each landing shape (kcat
   lines of the PostgreSQL feed, a Connect sink file of the SQL Server feed), decoded by their
   decoded model with the default driver memory: seconds, the JVM's peak heap (in use, and
   left after collections), and whether every line kept its number.
6. **Age**: ``--age-runs`` consecutive ``dbt build`` runs (tests included, as users run
   them), each over an equal increment of one world that ages without growing (the
   generator's ``steady`` option: customers and orders stay at about their snapshot's count,
   so a read of the current state compares age, not size): seconds per run, storage on disk against
   a fresh full refresh of the same input (at the second, middle and last run; no middle
   under six runs), the time to read all of ``cdc_current``, one key's ``cdc_history`` and a
   typed current model; then four builds with nothing new (the first right after the last
   run, doing the ledger and segment maintenance it left due; the median of the other
   three), and ``cdc_current`` against a parquet table of its own rows. Each age build's
   node seconds by layer are kept, and the second and last runs compared.

7. **Against the Spark SQL a user would write** (:mod:`~python_udfs.bench.peer`): one
   Debezium PostgreSQL feed of 5,000 changes, ``events / 10`` and ``events``, built by
   ChangeLake (``dbt run --full-refresh``, ``dbt build --full-refresh``) and by a plain Spark
   SQL pipeline in the same session; the ratios, and the counts where their tables differ.

Numbers are wall-clock on whatever machine runs it; ratios within one run are what compare.
Nothing here asserts a time.
"""

from __future__ import annotations

from python_udfs.bench.cli import main, run
from python_udfs.bench.report import page, render

__all__ = ["main", "page", "render", "run"]
