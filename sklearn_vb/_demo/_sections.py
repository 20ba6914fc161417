"""The demo sections, in the order they run."""

from __future__ import annotations

import numpy as np

from ._format import print_size_table, print_trace, timed_fits


def bernoulli_mixture_section(seed):
    """The shared VBEM core on its smallest model: a VB mixture of Bernoullis."""
    from .._bernoulli_mixture import VBBernoulliMixture

    rng = np.random.default_rng(seed)
    true_k, n, d = 3, 300, 12
    means = rng.uniform(0.05, 0.95, size=(true_k, d))
    z = rng.integers(0, true_k, n)
    X = (rng.random((n, d)) < means[z]).astype(float)
    print(f"data: {n} binary vectors of length {d} from {true_k} clusters")
    model = timed_fits(lambda: VBBernoulliMixture(n_components=true_k, n_init=3, random_state=seed).fit(X))
    print_trace(model)
    rows = []
    for k in range(1, 7):
        fitted = VBBernoulliMixture(n_components=k, n_init=3, random_state=seed).fit(X)
        rows.append((k, fitted.lower_bound_, f"{fitted.n_iter_} iterations"))
    best = int(np.argmax([r[1] for r in rows]))
    print_size_table("components", rows, best, truth=true_k)


SECTIONS = {
    "core": ("VBEM core: VB mixture of Bernoullis", bernoulli_mixture_section),
}
