"""What the point scores of a fitted HMM pay for their restarts, and that they still find
a better optimum away from VB's: the screening budget of a restart follows the length of
the first run (``min_screen_iter`` of ``best_point_em``)."""

import warnings

import numpy as np
import pytest

from sklearn_vb import VBHiddenMarkov
from sklearn_vb.scoring import score, scoring_model_for
from sklearn_vb.hmm import _scoring_family as hmm_family
from sklearn_vb._core.evidence.point_em import best_point_em


def _toy(first_x=0.0, far_x=13.0, far_index=None):
    """Objective with a local optimum 0 at x = 0 (EM halves x: a run from 0 converges in
    two E steps) and the global optimum 5 at x = 20, approached from x >= 5 by the slow
    contraction x <- x + 0.2 (20 - x).  Start ``i`` is ``first_x`` for i = 0, else
    ``far_x`` (only for ``i == far_index`` when that is given, else 0)."""
    calls = []

    def evaluate(theta):
        calls.append(1)
        x = float(theta["x"][0])
        return (-x * x if x < 5 else 5.0 - 0.1 * (x - 20.0) ** 2), x

    def m_step(x, _):
        return {"x": np.array([0.5 * x if x < 5 else x + 0.2 * (20.0 - x)])}

    def starts(i):
        far = i > 0 and (far_index is None or i == far_index)
        return {"x": np.array([far_x if far else first_x])}

    return starts, evaluate, m_step, calls


def test_restart_budget_follows_a_short_first_run():
    """First run: 2 E steps.  Fixed floors: 2 restarts x 4 draws x 5 E steps; with
    ``min_screen_iter=5`` each restart is one draw screened for 5 E steps."""
    kw = dict(n_init=3, max_iter=5000, tol=1e-10, owner="toy", draws_per_init=4)
    starts, evaluate, m_step, calls = _toy(far_x=0.0)
    best_point_em(starts, evaluate, m_step, **kw)
    assert len(calls) == 2 + 8 * 2  # every draw sits at the optimum: converged in 2
    starts, evaluate, m_step, calls = _toy(far_x=4.9)
    seen = []

    def counted(i):
        seen.append(i)
        return starts(i)

    run = best_point_em(counted, evaluate, m_step, min_screen_iter=5, **kw)
    assert seen == [0, 1, 2]  # one draw per restart
    assert run.objective == 0.0
    # first run 2, two restarts of at most 5, the best screened-out one finished for 5
    assert len(calls) <= 2 + 2 * 5 + 5


def test_restarts_still_find_the_better_basin():
    """A draw in the better basin (slow climb) is still found and finished."""
    kw = dict(n_init=3, max_iter=5000, tol=1e-10, owner="toy", draws_per_init=4,
              min_screen_iter=5)
    starts, evaluate, m_step, _ = _toy(far_x=9.0)
    run = best_point_em(starts, evaluate, m_step, **kw)
    assert run.converged and abs(run.objective - 5.0) < 1e-6


@pytest.mark.parametrize("first_len, draws", [(2, 1), (10, 2), (23, 4), (100, 4)])
def test_draws_per_restart_follow_the_first_run(first_len, draws):
    """``min(draws_per_init, max(n1, m) // m)`` draws per restart, each screened for
    ``ceil(max(n1, m) / draws)`` E steps (``n1`` the first run's E steps)."""
    m = 5
    evals = {}

    def starts(i):
        return {"id": np.array([i]), "n": np.array([0])}

    def evaluate(theta):
        i, n = int(theta["id"][0]), int(theta["n"][0])
        evals[i] = evals.get(i, 0) + 1
        if i == 0:  # climbs by one per step, then stays: converged after first_len + 1
            return float(min(n, first_len)), None
        return -1e3 + n, None  # always climbing, always behind: screened out

    def m_step(stats, theta):
        return {"id": theta["id"], "n": theta["n"] + 1}

    best_point_em(starts, evaluate, m_step, n_init=3, max_iter=1000, tol=0.5, owner="toy",
                  draws_per_init=4, min_screen_iter=m, finish_screened=False)
    n1 = evals.pop(0)
    assert n1 == first_len + 2
    assert len(evals) == 2 * draws
    per_draw = -(-max(n1, m) // draws)
    assert set(evals.values()) == {per_draw}


@pytest.fixture(scope="module")
def gaussian_hmm():
    rng = np.random.default_rng(0)
    K, D = 3, 2
    means = np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 4.0]])
    T = 600
    z = np.zeros(T, dtype=int)
    for t in range(1, T):
        z[t] = z[t - 1] if rng.random() < 0.95 else rng.integers(K)
    X = means[z] + rng.normal(size=(T, D))
    lengths = [300, 300]
    est = VBHiddenMarkov(K, emission="gaussian", covariance_type="full",
                         random_state=0).fit(X, lengths=lengths)
    return est, X, lengths


def test_gaussian_hmm_point_em_costs_about_its_first_run(gaussian_hmm):
    """On well separated states EM from VB's point converges in a few E steps; the
    restarts then cost about as much again, not a fixed 20 E steps each."""
    est, X, lengths = gaussian_hmm
    model = scoring_model_for(est)
    data = model.prepare_data(X, lengths=lengths)
    theta = model.fit_point(data, rng=np.random.default_rng(0))
    run = model.last_point_run_
    first = model.fit_point(data, rng=np.random.default_rng(0), n_init=1)
    n_first = model.last_point_run_.n_iter
    assert n_first < hmm_family._MIN_SCREEN_ITER * 2
    screen = max(hmm_family._MIN_SCREEN_ITER, n_first)
    # two restarts screened for `screen` E steps, the best of them finished for as many
    assert run.n_iter <= n_first + 3 * screen
    # the restarts did not find anything better here: the same point as the first run
    for name in theta:
        np.testing.assert_allclose(theta[name], first[name])


def test_gaussian_hmm_scores_are_seeded(gaussian_hmm):
    est, X, lengths = gaussian_hmm
    for method in ("bic", "cs", "map"):
        a = score(est, X, method, lengths=lengths).log_evidence
        b = score(est, X, method, lengths=lengths).log_evidence
        assert a == b


def _three_basins():
    """Start 0 sits at the local optimum 0 (EM halves x below 5).  From 60 a fast
    contraction reaches the optimum 3 at x = 100; from 10 a slow one climbs towards the
    optimum 2 at x = 20, still below 0 after its screening budget."""
    calls = []

    def objective(x):
        if x < 5:
            return -x * x
        return 2.0 - 0.1 * (x - 20.0) ** 2 if x < 50 else 3.0 - 0.1 * (x - 100.0) ** 2

    def evaluate(theta):
        calls.append(float(theta["x"][0]))
        return objective(float(theta["x"][0])), float(theta["x"][0])

    def m_step(x, _):
        if x < 5:
            return {"x": np.array([0.5 * x])}
        target, rate = (20.0, 0.01) if x < 50 else (100.0, 0.9)
        return {"x": np.array([x + rate * (target - x)])}

    def starts(i):
        return {"x": np.array([(0.0, 60.0, 10.0)[i]])}

    return starts, evaluate, m_step, calls


def test_no_screened_restart_is_finished_once_a_restart_beat_the_first_run():
    """The best screened-out restart gets another budget only while the first run is
    still the best: here restart 1 gets ahead within its budget, restart 2 (screened
    out, heading for a lower optimum) is not run on."""
    starts, evaluate, m_step, calls = _three_basins()
    run = best_point_em(starts, evaluate, m_step, n_init=3, max_iter=5000, tol=1e-10,
                        owner="toy", restart_iter=20)
    assert run.converged and abs(run.objective - 3.0) < 1e-8
    from_ten = [x for x in calls if 5 <= x < 50]
    assert len(from_ten) == 20  # its screening budget, no second budget
    # with restart 1 in the slow basin too, the first run stays best and the highest
    # screened-out restart is given its second budget
    starts2 = lambda i: {"x": np.array([(0.0, 10.0, 11.0)[i]])}  # noqa: E731
    calls.clear()
    run = best_point_em(starts2, evaluate, m_step, n_init=3, max_iter=5000, tol=1e-10,
                        owner="toy", restart_iter=20)
    assert run.objective == 0.0
    assert len([x for x in calls if 5 <= x < 50]) == 3 * 20
