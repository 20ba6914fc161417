"""What the tests of fits on dask arrays share besides the ``dask_cluster`` and
``dask_client`` fixtures of ``tests/conftest.py``: a way to lose one of the cluster's
workers while the tasks of a pass over the chunks are on it."""


def lose_a_worker_at_pass(n, cluster, monkeypatch):
    """Close the worker holding a chunk or task of the ``n``-th pass over the chunks
    (counted from 1) once its tasks are submitted; returns the list of the passes'
    functions, which grows as the fit runs."""
    from sklearn_vb._core import distributed as runners

    original = runners.ClientRunner.map
    calls = []

    def map_then_lose_a_worker(self, fn, chunks, args):
        calls.append(fn)
        if len(calls) != n:
            return original(self, fn, chunks, args)
        futures = [self.client.submit(fn, chunk, *args, pure=False, retries=runners.RETRIES)
                   for chunk in chunks]
        holders = self.client.who_has(futures + list(chunks))
        address = next(a for addrs in holders.values() for a in addrs)
        worker = next(w for w in cluster.workers.values() if w.address == address)
        cluster.sync(worker.close)
        return self.client.gather(futures)

    monkeypatch.setattr(runners.ClientRunner, "map", map_then_lose_a_worker)
    return calls
