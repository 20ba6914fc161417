"""Beal's structure class (2 binary hidden, 4 five-valued observed nodes) and data."""

import collections

import numpy as np

from sklearn_vb.dag.structure import CPTLayout, parameter_count, parse_structure
from sklearn_vb.dag import alias_count
from sklearn_vb.datasets import (
    BEAL_SIZES,
    BEAL_TRUE_CODE,
    beal_true_parameters,
    beal_true_structure,
    bipartite_structure,
    enumerate_bipartite_structures,
    make_beal_dag,
    make_beal_dag_datasets,
)


def _d(code):
    return parameter_count(parse_structure(*bipartite_structure(code)))


def test_136_structures_with_thesis_counts():
    codes = enumerate_bipartite_structures()
    assert len(codes) == 136
    assert len(set(codes)) == 136
    swapped = [tuple({1: 2, 2: 1}.get(c, c) for c in code) for code in codes]
    assert sum(s == c for s, c in zip(swapped, codes)) == 16
    connected = collections.Counter(len({h for c in code for h in (0, 1) if c >> h & 1}) for code in codes)
    assert connected == {2: 120, 1: 15, 0: 1}
    hist = collections.Counter(_d(c) for c in codes)
    assert dict(sorted(hist.items())) == {18: 1, 22: 4, 26: 12, 30: 20, 34: 20, 38: 24, 42: 22,
                                          46: 12, 50: 12, 54: 4, 58: 4, 66: 1}
    assert _d(BEAL_TRUE_CODE) == 50 and _d((0, 0, 0, 0)) == 18 and _d((3, 3, 3, 3)) == 66
    assert BEAL_TRUE_CODE in codes


def test_alias_counts_over_the_class():
    counts = collections.Counter()
    for code in enumerate_bipartite_structures():
        s = parse_structure(*bipartite_structure(code))
        lay = CPTLayout(s)
        counts[alias_count(s, np.ones(lay.size), lay)] += 1
    assert counts == {8: 15, 4: 105, 2: 15, 1: 1}


def test_true_parameters_and_generator():
    theta = beal_true_parameters()
    assert [t.shape for t in theta] == [(1, 2), (1, 2), (2, 5), (4, 5), (4, 5), (2, 5)]
    for t in theta:
        np.testing.assert_allclose(t.sum(1), 1.0)
    X, H = make_beal_dag(10240, random_state=0, return_hidden=True)
    assert X.shape == (10240, 4) and X.min() == 0 and X.max() == 4
    p22 = np.mean((H[:, 0] == 1) & (H[:, 1] == 1))
    assert abs(p22 - theta[0][0, 1] * theta[1][0, 1]) < 0.015
    # y2 | (s1, s2) follows its CPT row
    rows = 2 * H[:, 0] + H[:, 1]
    f = np.bincount(X[rows == 3, 1], minlength=5) / np.sum(rows == 3)
    np.testing.assert_allclose(f, theta[3][3], atol=0.02)


def test_nested_datasets():
    sets = make_beal_dag_datasets(random_state=1)
    assert sorted(sets) == sorted(BEAL_SIZES) and len(sets) == 20
    np.testing.assert_array_equal(sets[480], sets[10240][:480])
    np.testing.assert_array_equal(sets[10], make_beal_dag(10, random_state=1))


def test_true_structure_is_a_valid_model():
    parents, cards, hidden = beal_true_structure()
    assert parents["y2"] == ["s1", "s2"] and parents["y1"] == ["s1"] and parents["y4"] == ["s2"]
    assert cards == {"s1": 2, "s2": 2, "y1": 5, "y2": 5, "y3": 5, "y4": 5}
