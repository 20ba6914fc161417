"""The transformers name their output columns, so ``set_output(transform="pandas")``
works on them alone and inside a Pipeline."""

import warnings

import numpy as np
import pytest
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_vb import VBLinearDynamicalSystem, VBMixtureFactorAnalysers

pd = pytest.importorskip("pandas")

X = np.random.default_rng(0).normal(size=(80, 4)) @ np.random.default_rng(1).normal(size=(4, 4))


@pytest.mark.parametrize("make, prefix", [
    (lambda: VBMixtureFactorAnalysers(n_components=1, search=False, max_iter=30, random_state=0),
     "vbmixturefactoranalysers"),
    (lambda: VBLinearDynamicalSystem(n_states=2, max_iter=30, random_state=0),
     "vblineardynamicalsystem"),
], ids=["mfa", "lds"])
def test_pandas_output_in_a_pipeline(make, prefix):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe = make_pipeline(StandardScaler(), make()).set_output(transform="pandas")
        out = pipe.fit_transform(pd.DataFrame(X, columns=list("abcd")))
        plain = make_pipeline(StandardScaler(), make()).fit_transform(X)
    assert isinstance(out, pd.DataFrame)
    names = pipe[-1].get_feature_names_out()
    assert list(out.columns) == list(names)
    assert all(name.startswith(prefix) for name in names)
    assert out.shape == plain.shape
    np.testing.assert_allclose(out.to_numpy(), plain, rtol=1e-10, atol=1e-12)
