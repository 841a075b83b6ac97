"""PySpark's Python worker daemon, quiet about connections the JVM has closed.

Spark starts this module (``spark.python.daemon.module``) instead of ``pyspark.daemon``; it is
that daemon, with one change. The JVM closes a worker's connection when it stops reading its
results: a query that needs only its first rows, a task that ends before it has read them all
(ten in one benchmark's builds of a million changes; which queries, not traced). Over a Unix
domain socket (``spark.python.unix.domain.socket.enabled``, which bounds the rows in flight to
a worker) the worker's last write then fails at once with EPIPE, and the daemon prints the
``BrokenPipeError`` with its traceback to the console, where it reads like a failure of the
run; over TCP the same write lands in the socket's buffer and nothing is shown. Nobody is
reading that connection any more, so the worker ends here without a word; every other error
is reported as before.

Only what the daemon imports before it forks is imported here (no pyarrow, no threads).
"""

from __future__ import annotations

import socket

from pyspark import daemon

_worker = daemon.worker


def worker(sock: socket.socket, authenticated: bool) -> int:
    """``pyspark.daemon.worker``; a connection the JVM closed ends the worker without a
    traceback (1: a worker the daemon does not reuse)."""
    try:
        return _worker(sock, authenticated)
    except BrokenPipeError:
        return 1


# the daemon's manager calls the module's `worker` for each forked worker
daemon.worker = worker

if __name__ == "__main__":
    daemon.manager()
