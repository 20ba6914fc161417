"""The compiled pieces of the structure search on fully observed data: family counts and
log-likelihoods, NumPy-order sums, pattern compression, the legal moves and the gains the
tabu climb keeps per family."""

import itertools
import math

import numpy as np
import pytest

from sklearn_vb.dag.structure import unique_rows
from sklearn_vb.model_selection._dag_families import FamilyScores
from sklearn_vb.model_selection._dag_kernels import (
    best_move,
    family_bics,
    family_loglik,
    family_table,
    legal_moves,
    pairwise_sum,
)
from sklearn_vb.model_selection._dag_tabu import _KINDS, TabuClimb


def _patterns(rng, n, cards, dependent=True):
    X = np.column_stack([rng.integers(0, c, size=n) for c in cards])
    if dependent:  # some dependence, so that tables are not uniform
        X[:, 1] = (X[:, 0] + (rng.random(n) < 0.3)) % cards[1]
    codes, weights = np.unique(X, axis=0, return_counts=True)
    return codes.astype(np.int64), weights.astype(float)


def _naive_table(codes, weights, j, parents, cards):
    """Counts by a dictionary of parent configurations, rows in sorted configuration order."""
    rows = {}
    for x, w in zip(codes, weights):
        rows.setdefault(tuple(x[list(parents)]), np.zeros(cards[j]))[x[j]] += w
    return np.array([rows[k] for k in sorted(rows)]).reshape(-1, cards[j])


def _numpy_bic(N, cards, j, parents, log_n):
    rows = N.sum(axis=1, keepdims=True)
    nz = N > 0
    q = math.prod(cards[p] for p in parents)
    return float(np.sum(N[nz] * np.log((N / rows)[nz]))) - 0.5 * (cards[j] - 1) * q * log_n


# small cardinalities fill dense tables; 40 and 60 states make the tables of two or
# three parents sparser than the patterns, which the kernels count by sorting
@pytest.mark.parametrize("cards", [(2, 3, 2, 4, 3), (3, 2, 5, 2, 6, 2), (40, 60, 40, 3)])
def test_family_counts_and_bic_equal_the_naive_ones(cards):
    rng = np.random.default_rng(len(cards))
    codes, weights = _patterns(rng, 3000, cards)
    codes_t = np.ascontiguousarray(codes.T)
    radices = np.array(cards, dtype=np.int64)
    log_n = math.log(weights.sum())
    J = len(cards)
    for j in range(J):
        others = [p for p in range(J) if p != j]
        for k in range(0, 4):
            for parents in itertools.combinations(others, k):
                ps = np.array(parents, dtype=np.int64)
                naive = _naive_table(codes, weights, j, parents, cards)
                table = family_table(codes_t, weights, j, ps, radices)
                np.testing.assert_array_equal(table, naive)
                # NumPy's formula to within a few units in the last place: NumPy's
                # vectorised logarithms and sums differ between its versions and CPUs
                # in the last bit, so bit equality is not a property of our kernel
                expected = _numpy_bic(naive, cards, j, parents, log_n)
                bic = family_bics(codes_t, weights, j, ps, np.array([0, k], dtype=np.int64),
                                  radices, log_n, 2**62)[0]
                assert bic == pytest.approx(expected, rel=8 * np.finfo(float).eps, abs=0)
                assert family_loglik(codes_t, weights, j, ps, radices) == pytest.approx(
                    expected + 0.5 * (cards[j] - 1) * math.prod(cards[p] for p in parents)
                    * log_n, rel=1e-12, abs=1e-9)


def test_family_bics_leaves_tables_too_large_for_one_code():
    cards = (2, 3, 4)
    rng = np.random.default_rng(0)
    codes, weights = _patterns(rng, 200, cards)
    out = family_bics(np.ascontiguousarray(codes.T), weights, 0, np.array([1, 2], np.int64),
                      np.array([0, 0, 2], np.int64), np.array(cards, np.int64), 5.0, 20)
    assert np.isfinite(out[0]) and np.isnan(out[1])  # 2 * 12 cells > 20


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 127, 128, 129, 255, 1000, 4097, 20001])
def test_pairwise_sum_is_numpys_sum(n):
    rng = np.random.default_rng(n)
    a = rng.standard_normal(n + 3) * 10.0 ** rng.uniform(-3, 6, n + 3)
    assert pairwise_sum(a, 0, n) == np.sum(a[:n])
    assert pairwise_sum(a, 3, n) == np.sum(a[3:])


@pytest.mark.parametrize("width", [1, 3, 12, 45])
def test_unique_rows_is_numpys_unique_over_rows(width):
    rng = np.random.default_rng(width)
    # -1 marks a missing value; 45 columns of up to 6 states overflow one int64 code
    a = np.column_stack([rng.integers(-1, rng.integers(1, 6), size=700) for _ in range(width)])
    a[350:] = a[:350]  # repeated rows
    for x in (a, a < 1):
        rows, inverse = unique_rows(x)
        rows_np, inverse_np = np.unique(x, axis=0, return_inverse=True)
        np.testing.assert_array_equal(rows, rows_np)
        assert rows.dtype == rows_np.dtype
        np.testing.assert_array_equal(inverse.reshape(-1), inverse_np.reshape(-1))


def test_select_values_equal_one_family_at_a_time():
    cards = (3, 2, 4, 2, 3)
    codes, weights = _patterns(np.random.default_rng(1), 800, cards)
    batch = FamilyScores(codes, weights, cards, ("bic",))
    single = FamilyScores(codes, weights, cards, ("bic",))
    sets = [(), (0,), (0, 2), (1, 3, 4), (0, 1, 3, 4)]
    values = batch.select_values(2, [s for s in sets if 2 not in s], 0)
    expected = [single.local(2, s)[0] for s in sets if 2 not in s]
    np.testing.assert_array_equal(values, expected)


# --------------------------------------------------------------------------- moves
def _reaches(E, src, dst):
    stack, seen = [src], {src}
    while stack:
        u = stack.pop()
        if u == dst:
            return True
        for v in np.flatnonzero(E[u]):
            if v not in seen:
                seen.add(int(v))
                stack.append(int(v))
    return False


def _naive_moves(E, pair_ok, required, max_in_degree):
    """Every single-edge move that leaves a legal DAG, as (kind, parent, child)."""
    J = E.shape[0]
    out = set()
    indeg = E.sum(axis=0)
    for p, c in itertools.permutations(range(J), 2):
        if E[p, c]:
            if required[p, c]:
                continue
            out.add((1, p, c))
            F = E.copy()
            F[p, c] = False
            if (pair_ok[c, p] and (max_in_degree is None or indeg[p] < max_in_degree)
                    and not _reaches(F, p, c)):
                out.add((2, p, c))
        elif (not E[c, p] and pair_ok[p, c] and (max_in_degree is None or indeg[c] < max_in_degree)
              and not _reaches(E, c, p)):
            out.add((0, p, c))
    return out


def _total(scores, parents, s):
    return sum(scores.local(c, tuple(sorted(ps)))[s] for c, ps in enumerate(parents))


@pytest.mark.parametrize("max_in_degree", [None, 2])
def test_cached_gains_equal_full_rescoring_after_random_moves(max_in_degree):
    cards = (3, 2, 4, 2, 3, 2, 3)
    J = len(cards)
    rng = np.random.default_rng(5)
    codes, weights = _patterns(rng, 1500, cards)
    scores = FamilyScores(codes, weights, cards, ("bic",))
    pair_ok = rng.random((J, J)) < 0.85
    np.fill_diagonal(pair_ok, False)
    required = np.zeros((J, J), dtype=bool)
    required[0, 1] = pair_ok[0, 1] = True
    climb = TabuClimb(scores, 0, pair_ok, required, max_in_degree, tabu_length=10,
                      tabu_steps=5, max_steps=None, tol=1e-6)
    climb._set_state([[] if c != 1 else [0] for c in range(J)])
    pick_rng = np.random.RandomState(0)
    checked = 0
    for _ in range(60):  # families are revisited, so cached gain columns are reused
        kind, p, c, gain, h = climb.moves()
        moves = {(int(k), int(a), int(b)) for k, a, b in zip(kind, p, c)}
        assert moves == _naive_moves(climb.E, pair_ok, required, max_in_degree)
        before = _total(scores, climb.parents, 0)
        for k, a, b, g in zip(kind, p, c, gain):
            parents = [list(ps) for ps in climb.parents]
            if k in (1, 2):
                parents[b].remove(a)
            if k == 0:
                parents[b].append(a)
            if k == 2:
                parents[a].append(b)
            assert g == pytest.approx(_total(scores, parents, 0) - before, abs=1e-8)
            checked += 1
        i = pick_rng.randint(gain.size)
        z = climb._zobrist
        climb.apply(_KINDS[kind[i]], int(p[i]), int(c[i]))
        # the hash after a move is the XOR of the new graph's edge keys
        assert climb.hash == int(np.bitwise_xor.reduce(z[climb.E])) == h[i]
    assert checked > 500


def test_best_move_is_the_first_best_non_tabu_move():
    rng = np.random.default_rng(2)
    J = 6
    E = np.zeros((J, J), dtype=bool)
    for p, c in [(0, 1), (1, 2), (0, 3), (4, 5)]:
        E[p, c] = True
    add_gain = np.round(rng.standard_normal((J, J)), 1)  # rounded: ties occur
    rem_gain = np.round(rng.standard_normal((J, J)), 1)
    np.fill_diagonal(add_gain, -np.inf)
    pair_ok = ~np.eye(J, dtype=bool)
    required = np.zeros((J, J), dtype=bool)
    kinds = np.ones(3, dtype=bool)
    zobrist = rng.integers(0, 2**62, size=(J, J))
    args = (E, add_gain, rem_gain, pair_ok, required, -1, kinds, zobrist, 12345)
    kind, p, c, gain, h = legal_moves(*args)
    order = np.argsort(-gain, kind="stable")
    for n_tabu in range(0, 6):
        tabu = h[order[:n_tabu]].astype(np.int64)
        n, k, bp, bc, bg, bh = best_move(*args, tabu)
        first = next(i for i in order if h[i] not in set(tabu.tolist()))
        assert n == gain.size
        assert (k, bp, bc, bg, bh) == (kind[first], p[first], c[first], gain[first], h[first])
    n, k, *_ = best_move(*args, h.astype(np.int64))
    assert k == -1  # every move tabu
