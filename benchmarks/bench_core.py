"""The VBEM template on the VB Bernoulli mixture against sklearn's BayesianGaussianMixture.

Not a like-for-like model (sklearn has no Bernoulli mixture): it shows the per-iteration
overhead of the shared loop against the loop users know.
"""

import numpy as np

from .harness import workload


@workload("core-bernoulli-mixture", per="iteration")
def bernoulli_mixture(quick):
    rng = np.random.default_rng(0)
    n, d, k = (500, 10, 3) if quick else (20000, 20, 5)
    z = rng.integers(0, k, n)
    X = (rng.random((n, d)) < rng.random((k, d))[z]).astype(float)

    def ours():
        from sklearn_vb._commands.bernoulli_mixture import VBBernoulliMixture

        model = VBBernoulliMixture(n_components=k, max_iter=50, tol=0, random_state=0,
                                   bound_check="off")
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(X)
        return model.n_iter_

    def sklearn_bgm_diag():
        import warnings

        from sklearn.mixture import BayesianGaussianMixture

        model = BayesianGaussianMixture(n_components=k, covariance_type="diag", max_iter=50,
                                        tol=0, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(X)
        return model.n_iter_

    return {"sklearn_vb": ours, "sklearn BayesianGaussianMixture (diag)": sklearn_bgm_diag}
