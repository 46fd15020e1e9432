"""metrics.compute against values worked out by hand on tiny examples (0-100 scale)."""

import math

import numpy as np
import pytest

from electra_bench.errors import BenchError
from electra_bench.score import metrics

# 2x2 table: TP=3, FN=1, TN=2, FP=1
GOLD = [1, 1, 1, 1, 0, 0, 0]
PRED = [1, 1, 1, 0, 0, 0, 1]


def test_accuracy():
    assert metrics.compute(["accuracy"], [1, 0, 1, 1], [1, 0, 0, 1])["accuracy"] == pytest.approx(75.0)


def test_mcc_of_a_known_2x2_table():
    # (TP*TN - FP*FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN)) = (6 - 1) / sqrt(4*4*3*3) = 5/12
    assert metrics.compute("mcc", PRED, GOLD)["mcc"] == pytest.approx(100 * 5 / 12)


def test_f1_of_positive_class():
    # precision 3/4, recall 3/4 -> F1 3/4
    assert metrics.compute(["f1"], PRED, GOLD)["f1"] == pytest.approx(75.0)


def test_f1_is_about_class_1_not_the_majority():
    # flip the roles: now class 1 has TP=2, FP=1, FN=1 -> P=R=2/3
    flipped = metrics.compute(["f1"], [1 - p for p in PRED], [1 - g for g in GOLD])["f1"]
    assert flipped == pytest.approx(100 * 2 / 3)


def test_pearson_by_hand():
    # x=[1,2,3], y=[1,2,4]: sum dxdy = 3, sum dx^2 = 2, sum dy^2 = 14/3 -> r = 3 / sqrt(28/3)
    r = metrics.compute(["pearson"], [1.0, 2.0, 4.0], [1.0, 2.0, 3.0])["pearson"]
    assert r == pytest.approx(100 * 3 / math.sqrt(28 / 3))


def test_spearman_by_hand():
    # ranks [1,3,2] vs [1,2,3]: d^2 sum = 2 -> rho = 1 - 6*2/(3*(9-1)) = 0.5
    assert metrics.compute(["spearman"], [0.1, 0.9, 0.5], [1.0, 2.0, 3.0])["spearman"] == pytest.approx(50.0)
    # a monotone but non-linear relation is a perfect rank correlation
    assert metrics.compute(["spearman"], [1, 2, 4], [1, 2, 3])["spearman"] == pytest.approx(100.0)


def test_several_metrics_at_once_and_arrays():
    out = metrics.compute(["accuracy", "f1", "mcc"], np.array(PRED), np.array(GOLD))
    assert set(out) == {"accuracy", "f1", "mcc"}
    assert out["accuracy"] == pytest.approx(100 * 5 / 7)


def test_undefined_values_are_zero_not_nan():
    const = [1, 1, 1, 1]
    gold = [1, 0, 1, 0]
    out = metrics.compute(["mcc", "f1"], [0, 0, 0, 0], gold)
    assert out == {"mcc": 0.0, "f1": 0.0}
    corr = metrics.compute(["pearson", "spearman"], [2.0] * 4, [1.0, 2.0, 3.0, 4.0])
    assert corr == {"pearson": 0.0, "spearman": 0.0}
    assert metrics.compute(["mcc"], const, gold)["mcc"] == 0.0


@pytest.mark.parametrize(
    "names, pred, gold",
    [
        (["bleu"], [1], [1]),
        (["accuracy"], [1, 0], [1]),
        (["accuracy"], [], []),
        (["accuracy"], [0.5, 1.0], [1, 0]),
    ],
)
def test_bad_input_is_a_bench_error(names, pred, gold):
    with pytest.raises(BenchError):
        metrics.compute(names, pred, gold)
