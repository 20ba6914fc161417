"""Running one function on every chunk of a dask array where the chunk lives.

A batch VBEM fit on a dask array keeps the chunks of its validated data where they
are (as futures on a ``distributed`` cluster; without a client, as delayed objects that
the local scheduler recomputes from the array's graph whenever a pass needs them, so
that only a few chunks are in memory at a time) and runs every pass over the data as
one task per chunk, whose results the client adds up in chunk order.

The arguments of a task (the small parameter arrays of q(theta)) travel with it rather
than being scattered to the workers: scattered data have no lineage, so they would be
lost with a worker, while a task's arguments are resent with it.  A lost worker costs
the chunks it held and the tasks it was running; the scheduler recomputes both
elsewhere from the array's graph, and the client waits for them.  ``RETRIES`` more
attempts are allowed to a task that raises (e.g. a read error of the storage).

Nothing here imports dask at module level: the package must import without it.
"""

from __future__ import annotations

import sys

__all__ = ["RETRIES", "ClientRunner", "LocalRunner", "check_batch_vb", "chunk_runner",
           "is_dask_array", "is_dask_partitions"]

#: further attempts of a chunk task that raises
RETRIES = 2


def is_dask_array(X):
    """Whether ``X`` is a dask array (without importing dask: if it was never
    imported, nothing can be one)."""
    module = sys.modules.get("dask.array")
    return module is not None and isinstance(X, module.Array)


def is_dask_partitions(X):
    """Whether ``X`` is a dask bag or a non-empty list (or tuple) of dask delayed
    objects: partitions of items (sequences) that a fit reads where they live."""
    bag = sys.modules.get("dask.bag")
    if bag is not None and isinstance(X, bag.Bag):
        return True
    delayed = sys.modules.get("dask.delayed")
    return (delayed is not None and isinstance(X, (list, tuple)) and len(X) > 0
            and all(isinstance(x, delayed.Delayed) for x in X))


def check_batch_vb(estimator, what="A dask array X"):
    """A dask collection (``what``) is fitted by batch VBEM only: a clear ValueError
    otherwise."""
    if estimator.method != "vb" or estimator.learning_method != "batch":
        raise ValueError(f"{what} is fitted by batch VBEM: it needs method='vb' "
                         f"and learning_method='batch'; got method={estimator.method!r}, "
                         f"learning_method={estimator.learning_method!r}.")


class ClientRunner:
    """Chunks as futures on a ``distributed`` cluster."""

    def __init__(self, client):
        self.client = client

    def keep(self, tasks):
        return self.client.compute(tasks)

    def map(self, fn, chunks, args):
        futures = [self.client.submit(fn, chunk, *args, pure=False, retries=RETRIES)
                   for chunk in chunks]
        return self.client.gather(futures)


class LocalRunner:
    """Chunks as delayed objects computed by dask's default scheduler in every pass."""

    def keep(self, tasks):
        return tasks

    def map(self, fn, chunks, args):
        import dask

        return list(dask.compute(*[dask.delayed(fn, pure=False)(chunk, *args)
                                   for chunk in chunks]))


def chunk_runner():
    """The runner of the current ``distributed`` client, or the local scheduler's."""
    try:
        from distributed import default_client
    except ImportError:
        return LocalRunner()
    try:
        return ClientRunner(default_client())
    except ValueError:  # no client
        return LocalRunner()
