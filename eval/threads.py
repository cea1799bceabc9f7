"""eval's threads: independent steps (reading two files, indexing judgements, hashing a golden
set, ranking two halves of the queries) overlap on a second core, since numpy and Arrow
release the GIL while they work.

A leaf of ``goldset.eval``: it imports nothing of eval but :mod:`goldset.eval.arrow`, so every
module may use it (the parsers, the ranking, the reports) without an import cycle. What a
module's threads import on first use it registers with :func:`before_threads`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from goldset.eval.arrow import load_arrow

# Up to this many rows, a second thread costs more than it saves: a file this small is read
# by the plain parser (goldset.eval.readers.PLAIN_MAX_LINES is this figure), which holds the
# GIL, so the threads take turns (every 5 ms, Python's switch interval) instead of
# overlapping. See worth_threads.
THREADED_ROWS = 50_000

# Called on the calling thread before threads start (see ready_for_threads).
_PREPARATIONS: list[Callable[[], object]] = [load_arrow]


def worth_threads(rows: int) -> bool:
    """Whether eval's steps over this many rows (a run's, two runs', a golden set's
    judgements) should overlap on threads (:func:`concurrently`): only where numpy and Arrow
    work long enough without the GIL."""
    return rows > THREADED_ROWS


def before_threads(prepare: Callable[[], object]) -> Callable[[], object]:
    """Have :func:`ready_for_threads` call ``prepare`` (an import that threads would otherwise
    make on first use); returns it, so that it serves as a decorator."""
    _PREPARATIONS.append(prepare)
    return prepare


def ready_for_threads() -> None:
    """Import now, on the calling thread, what eval's threads import on first use: pyarrow
    with its compute functions and CSV reader, and what modules registered with
    :func:`before_threads` (the Arrow parsers, SHA-256 for a golden set's version).

    :func:`concurrently` calls it before it starts its threads. Two threads making a
    module's first import at the same moment can meet it half-initialised in CPython 3.11
    ("cannot import name 'BuildInfo' from partially initialized module 'pyarrow.lib'"): it
    failed 1 eval of a 200,000-line messy run in about 100, even with eval.arrow's lock
    (which pyarrow's own lazy imports bypass).
    """
    for prepare in _PREPARATIONS:
        prepare()


def concurrently(*calls: Callable[[], object], threads: bool = True) -> list:
    """Call each function on its own thread, all at once; their results, in order.

    An error is raised from the first call (in order) that failed. With ``threads=False``
    (small inputs: see :func:`worth_threads`) the calls run one after another.

    >>> concurrently(lambda: 1 + 1, lambda: "two")
    [2, 'two']
    """
    if not threads:
        return [call() for call in calls]
    ready_for_threads()  # no first import on two threads at once (see there)
    # Plain threads: concurrent.futures imports logging and queue, a cost on every eval's start-up.
    results: list = [None] * len(calls)
    errors: list[BaseException | None] = [None] * len(calls)

    def run(position: int, call: Callable[[], object]) -> None:
        try:
            results[position] = call()
        except BaseException as error:  # re-raised on the calling thread, below
            errors[position] = error

    started = [threading.Thread(target=run, args=item) for item in enumerate(calls)]
    for thread in started:
        thread.start()
    for thread in started:
        thread.join()
    failed = next((error for error in errors if error is not None), None)
    if failed is not None:
        raise failed
    return results
