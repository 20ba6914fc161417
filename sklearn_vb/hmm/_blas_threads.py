"""BLAS on one thread while a forward-backward pass runs batched.

The batched recursion (:mod:`.forward_backward_batched`) makes a few small matrix
products per time step, thousands in a pass.  A multi-threaded BLAS wakes and
synchronises its threads for the larger of them; on a machine whose cores are busy
with other work the waiting made a pass tens of times slower than on one thread, so
the pass runs with BLAS on one thread (as the MFA's VBEM does).  The per-sequence
recursion calls no BLAS and runs as it is.

The limit is that of ``threadpoolctl``: with a BLAS whose threads all threads of the
process share (OpenBLAS on pthreads), the first thread to set a limit holds it until
it leaves and passes running in other threads meanwhile run under it.  The libraries
are listed once (that takes milliseconds; setting the limit, microseconds).
"""

from __future__ import annotations

from contextlib import nullcontext

from .forward_backward_batched import batch_pays_off

__all__ = ["forward_backward_blas"]


class _BlasLibraries:
    """The BLAS libraries of the process, listed at the first batched pass."""

    def __init__(self):
        self._controller = None
        self._blas = None

    def one_thread(self):
        if self._controller is None:
            # the BLAS that compiled code calls (numba's np.dot) is scipy's: loaded
            # before the controller lists the libraries
            from scipy.linalg import cython_blas
            from threadpoolctl import ThreadpoolController

            self._blas = cython_blas
            self._controller = ThreadpoolController()
        return self._controller.limit(limits=1, user_api="blas")


_BLAS = _BlasLibraries()


def forward_backward_blas(table, index, starts, ends):
    """The context to run a forward-backward pass over the emission table ``table``
    (R, K), frames' rows ``index`` and sequences ``starts``/``ends`` in: BLAS on one
    thread where the pass runs batched
    (:func:`~.forward_backward_batched.batch_pays_off`), nothing otherwise."""
    if batch_pays_off(starts, ends, table.shape[1], table.shape[0], index.shape[0]):
        return _BLAS.one_thread()
    return nullcontext()
