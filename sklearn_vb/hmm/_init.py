"""The starts of an HMM fit: the initial q(theta) of every start kind of
``init_params``, and the point that starts EM for ``method="ml"``/``"map"``.

``prior`` and the posteriors returned are :class:`~sklearn_vb.hmm._state.DirichletHMM`
triples; ``data`` is the estimator's ``_FitData``.
"""

from __future__ import annotations

from . import _logistic_transitions as lt
from .emissions._checks import init_posterior_array
from ._state import DirichletHMM, PointParameters
from ._vbem import frame_marginals, stats_from_resp, vbm

__all__ = ["initial_posterior", "marginal_start_stats", "posterior_from_init", "start_point"]

#: weight of the random-parameter state marginals in the "random_marginals" start
_MARGINAL_SHRINK = 0.3


def posterior_from_init(family, init_posterior, K, prior):
    """The q(theta) given by the user as ``init_posterior`` (``init_params="posterior"``)."""
    post = init_posterior
    if post is None:
        raise ValueError("init_params='posterior' needs init_posterior (a dict of arrays).")
    startprob = init_posterior_array(post, "startprob", (K,), positive=True)
    if isinstance(prior.transmat, lt.LogisticCoefficients):
        transmat = _logistic_from_init(post, prior.transmat)
    else:
        transmat = init_posterior_array(post, "transmat", prior.transmat.shape,
                                        positive=True)
    return DirichletHMM(startprob, transmat,
                        family.check_init_posterior(post, prior.emission, K))


def _logistic_from_init(post, prior):
    """q(W) of ``init_posterior`` with continuous inputs: the means ``transition_coef``
    (K, K-1, P+1) if given (else the prior's), with the prior's precision; a
    ``transmat`` of Dirichlet counts has no meaning there."""
    if "transmat" in post:
        raise ValueError("init_posterior['transmat'] (Dirichlet counts) does not apply "
                         "to transition_inputs='continuous'; give 'transition_coef', "
                         "the means of the coefficients, of shape (K, K - 1, P + 1).")
    if "transition_coef" not in post:
        return prior
    mean = init_posterior_array(post, "transition_coef", prior.mean.shape)
    return lt.LogisticCoefficients(mean, prior.precision.copy())


def initial_posterior(how, family, K, prior, data, random_state, init_posterior=None):
    """The initial q(theta) of the start kind ``how``.

    ``"posterior"`` takes ``init_posterior``; ``"random_params"`` draws Dirichlet counts
    of total 10 added to the prior's; ``"random_marginals"`` runs one VBM step from the
    state marginals of such a draw, shrunk towards uniform; any other kind is the
    family's initial labelling of the frames followed by one VBM step.
    """
    if how == "posterior":
        return posterior_from_init(family, init_posterior, K, prior)
    if how in ("random_params", "random_marginals"):

        def draw(shape):
            theta = random_state.uniform(size=shape)
            return 10.0 * theta / theta.sum(axis=-1, keepdims=True)

        if not family.random_params_init:
            raise ValueError(
                f"init_params={how!r} needs emission parameters that are probability "
                "vectors (categorical emissions)."
            )
        startprob = prior.startprob + draw(K)
        if isinstance(prior.transmat, lt.LogisticCoefficients):
            transmat = lt.random_posterior(prior.transmat, draw((K, K)))
        else:
            transmat = prior.transmat + draw(prior.transmat.shape)
        posterior = DirichletHMM(startprob, transmat,
                                 family.random_posterior(prior.emission, draw))
        if how == "random_params":
            return posterior
        return vbm(family, prior, data.chunk_sum(family, marginal_start_stats, posterior,
                                                 prior.emission))
    return vbm(family, prior, data.start_statistics(how, family, K, prior.emission,
                                                    random_state))


def marginal_start_stats(data, family, posterior, emission_prior):
    """The statistics of the "random_marginals" start on ``data`` (all sequences or a
    chunk of them): the state marginals under ``posterior`` shrunk towards uniform."""
    K = posterior.startprob.shape[0]
    resp = (1.0 - _MARGINAL_SHRINK) / K + _MARGINAL_SHRINK * frame_marginals(
        family, posterior, data)
    return stats_from_resp(family, resp, data, emission_prior)


def start_point(family, K, posterior):
    """The mean of q(theta), the start of point-estimate EM (a
    :class:`~sklearn_vb.hmm._state.PointParameters`): normalised Dirichlet rows and the
    mean of the family's density over its blocks, the plug-in the scoring adapter's
    ``fit_point`` starts from too."""
    startprob = transmat = None
    if K > 1:
        w_pi, w_A = posterior.startprob, posterior.transmat
        startprob = w_pi / w_pi.sum()
        transmat = w_A / w_A.sum(axis=1, keepdims=True)
    emission = family.point_type.from_blocks(family.param_density(posterior.emission, K).mean())
    return PointParameters(startprob=startprob, transmat=transmat, emission=emission)
