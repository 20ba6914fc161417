"""A batch fit whose forward-backward arrays cannot be allocated is refused before it
starts, with the size it needs and what to do instead; partial_fit over chunks of the
same data works under the same limit."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from sklearn_vb import VBHiddenMarkov
from sklearn_vb._core import memory
from sklearn_vb.hmm._working_set import batch_fit_bytes, start_bytes


def test_batch_fit_bytes_counts_the_forward_backward_arrays():
    T, K = 1000, 4
    # categorical: alpha (T, K), two (T,) vectors, three (M + 1, K) tables and the
    # shifts, the validated symbols and their table rows
    assert batch_fit_bytes(T, 1, K, True, n_symbols=3) == 8 * (T * K + 2 * T + 3 * 4 * K + 4
                                                               + 2 * T)
    # Gaussian: the tables have a row per frame
    assert batch_fit_bytes(T, 2, K, False) == 8 * (T * K + 2 * T + 3 * T * K + T + 2 * T + T)
    assert batch_fit_bytes(T, 2, K, False, frames_in_memory=True) == 8 * (
        T * K + 2 * T + 3 * T * K + T + T)


def test_a_batch_fit_over_the_limit_is_refused_with_the_size_and_partial_fit(monkeypatch):
    X = np.random.RandomState(0).randint(3, size=(2000, 1))
    lengths = [100] * 20
    monkeypatch.setattr(memory, "available_memory",
                        lambda: (60_000, "the process's address-space limit (RLIMIT_AS)"))
    model = VBHiddenMarkov(n_components=5, random_state=0)
    with pytest.raises(MemoryError, match=r"batch learning on 2,000 frames with "
                       r"n_components=5.*need about 1[0-9.]+ KiB, but this process can "
                       r"allocate about 58.6 KiB more \(the process's address-space limit"
                       r".*partial_fit"):
        model.fit(X, lengths=lengths)
    assert not hasattr(model, "lower_bound_")
    # online learning holds one minibatch at a time (its start runs on one): not refused
    model.partial_fit(X[:200], lengths=lengths[:2])
    VBHiddenMarkov(n_components=5, learning_method="online", max_iter=1, batch_size=2,
                   random_state=0).fit(X, lengths=lengths)


def test_a_batch_fit_within_the_limit_runs(monkeypatch):
    X = np.random.RandomState(0).randint(3, size=(2000, 1))
    monkeypatch.setattr(memory, "available_memory", lambda: (10**9, "test"))
    VBHiddenMarkov(n_components=2, max_iter=3, random_state=0).fit(X, lengths=[1000, 1000])
    monkeypatch.setattr(memory, "available_memory", lambda: (None, None))  # nothing known
    VBHiddenMarkov(n_components=2, max_iter=3, random_state=0).fit(X, lengths=[1000, 1000])


def test_available_memory_reads_the_address_space_limit():
    """In a child under RLIMIT_AS the room is at most the limit less the address space
    in use."""
    code = textwrap.dedent("""
        import resource
        from sklearn_vb._core.memory import _proc_kb, available_memory
        used = _proc_kb("/proc/self/status", "VmSize")
        resource.setrlimit(resource.RLIMIT_AS, (used + 300 * 2**20, resource.RLIM_INFINITY))
        room, what = available_memory()
        assert room <= 300 * 2**20 and room > 200 * 2**20, room
        assert "RLIMIT_AS" in what, what
    """)
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_memmap_too_large_for_the_address_space_limit(tmp_path):
    """Under a real RLIMIT_AS cap: a batch fit on a memmap of symbols is refused with the
    message (not a bare MemoryError from inside a kernel), and partial_fit over memmap
    slices of the same file completes."""
    path = tmp_path / "symbols.u1"
    T, L = 4_000_000, 1000
    rng = np.random.RandomState(0)
    rng.randint(4, size=T).astype(np.uint8).tofile(path)
    code = textwrap.dedent(f"""
        import resource
        import numpy as np
        from sklearn_vb import VBHiddenMarkov
        from sklearn_vb._core.memory import _proc_kb
        small = np.random.RandomState(1).randint(4, size=(400, 1))
        VBHiddenMarkov(n_components=20, max_iter=2).fit(small, lengths=[200, 200])
        VBHiddenMarkov(n_components=20).partial_fit(small, lengths=[200, 200])
        used = _proc_kb("/proc/self/status", "VmSize")
        resource.setrlimit(resource.RLIMIT_AS, (used + 300 * 2**20, resource.RLIM_INFINITY))
        X = np.memmap({str(path)!r}, dtype=np.uint8, mode="r").reshape(-1, 1)
        model = VBHiddenMarkov(n_components=20, random_state=0)
        try:
            model.fit(X, lengths=[{L}] * ({T} // {L}))
        except MemoryError as exc:
            assert "partial_fit" in str(exc) and "RLIMIT_AS" in str(exc), str(exc)
        else:
            raise AssertionError("the batch fit was not refused")
        online = VBHiddenMarkov(n_components=20, random_state=0, total_samples={T // L},
                                batch_size=100)
        for start in range(0, {T}, 500_000):
            chunk = np.memmap({str(path)!r}, dtype=np.uint8, mode="r", offset=start,
                              shape=(500_000, 1))
            online.partial_fit(chunk, lengths=[{L}] * (500_000 // {L}))
        assert np.isfinite(online.lower_bound_)
    """)
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
           "MKL_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env)
    assert done.returncode == 0, done.stderr[-3000:]


def test_start_bytes_counts_the_arrays_of_each_start():
    T, K, D, M = 1000, 4, 2, 7
    assert start_bytes("random_params", T, 1, K, M) == 0
    assert start_bytes("posterior", T, 1, K, M) == 0
    # forward-backward with a table row per frame, and the shrunk marginals
    assert start_bytes("random_marginals", T, 1, K, M) == 8 * (5 * T * K + 4 * T)
    assert start_bytes("kmeans", T, D, K, D) == 8 * (3 * T * K + T * D)
    # the window features of every frame (d = M for symbols) and their copies
    assert start_bytes("context", T, 1, K, M) == 8 * (8 * T * M + 2 * T * K)


def test_a_start_over_the_limit_is_refused_before_any_start_runs(monkeypatch):
    # the iteration's arrays fit, the starts' do not: the largest start of "auto" (the
    # context start's window features) is named before the first start runs
    X = np.random.RandomState(0).randint(3, size=(2000, 1))
    lengths = [100] * 20
    iteration = batch_fit_bytes(2000, 1, 5, True, 3)
    assert iteration < 200_000 < start_bytes("context", 2000, 1, 5, 3)
    monkeypatch.setattr(memory, "available_memory", lambda: (200_000, "test"))
    from sklearn_vb.hmm import _init

    calls = []
    real = _init.initial_posterior
    monkeypatch.setattr(_init, "initial_posterior",
                        lambda *a, **k: calls.append(a[0]) or real(*a, **k))
    with pytest.raises(MemoryError, match=r"the start init_params='context' on 2,000 "
                       r"frames with n_components=5.*random_params.*partial_fit"):
        VBHiddenMarkov(n_components=5, random_state=0).fit(X, lengths=lengths)
    assert calls == []
    # a start without a pass over the frames runs; online learning starts on a minibatch
    VBHiddenMarkov(n_components=5, init_params="random_params", max_iter=3,
                   random_state=0).fit(X, lengths=lengths)
    VBHiddenMarkov(n_components=5, learning_method="online", max_iter=1, batch_size=5,
                   random_state=0).fit(X, lengths=lengths)
