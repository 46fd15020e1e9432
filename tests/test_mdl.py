"""The online code (score/mdl.py): informative features transmit labels in fewer bits than the uniform
code, labels the features cannot tell cost the uniform code or more, and the blocks are the paper's."""

import math

import numpy as np
import pytest

from electra_bench.score.mdl import block_ends, online_codelength


def _separable(n=600, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 8))
    X[:, 0] += 3.0 * (2 * y - 1)  # one feature tells the label
    return X, y


def test_block_ends_are_the_papers_fractions():
    assert block_ends(3000) == [3, 6, 12, 24, 48, 96, 188, 375, 750, 1500, 3000]
    assert block_ends(10) == [1, 2, 5, 10]  # no empty block; the first sends at least one label
    assert block_ends(1) == [1]


def test_informative_features_compress_and_shuffled_labels_do_not():
    X, y = _separable()
    code = online_codelength(X, y, 2, seed=0)
    assert code.uniform_bits == pytest.approx(600 * math.log2(2))
    assert code.compression > 3.0
    shuffled = online_codelength(X, np.random.default_rng(1).permutation(y), 2, seed=0)
    assert 0.85 < shuffled.compression < 1.05


def test_same_seed_same_bits_and_the_order_matters():
    X, y = _separable()
    a, b = online_codelength(X, y, 2, seed=3), online_codelength(X, y, 2, seed=3)
    assert a.bits == b.bits
    assert online_codelength(X, y, 2, seed=4).bits != a.bits


def test_three_labels_and_blocks_that_miss_a_label():
    # 1% of 300 is 3 examples: the first probes see one or two of the three labels, and the code stays finite
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 300)
    X = rng.normal(size=(300, 4)) + y[:, None]
    code = online_codelength(X, y, 3, seed=0, ends=(0.01, 0.5, 1.0))
    assert code.uniform_bits == pytest.approx(300 * math.log2(3))
    assert code.compression > 1.2 and math.isfinite(code.bits)


def test_labels_outside_the_alphabet_are_refused():
    with pytest.raises(ValueError, match=r"\[0, 2\)"):
        online_codelength(np.zeros((3, 1)), np.array([0, 1, 2]), 2, seed=0)
    with pytest.raises(ValueError, match="no examples"):
        online_codelength(np.zeros((0, 1)), np.array([], dtype=int), 2, seed=0)


def test_many_noise_features_do_not_make_the_code_longer_than_uniform():
    # 400 examples, 300 dimensions of noise and one weak signal: a probe fit to convergence is confidently
    # wrong and codes the labels in more bits than the uniform code; the held-out choice of C does not
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 400)
    X = rng.normal(size=(400, 300))
    X[:, 0] += 0.5 * (2 * y - 1)
    assert online_codelength(X, y, 2, seed=0).compression > 0.97


def test_the_interval_is_over_pretraining_seeds_when_there_are_several():
    """scripts/mdl_probe.py: the evaluation seeds of one encoder share its noise, so with several
    pre-training seeds the units are the per-seed means (a pre-training seed that disagrees widens the
    interval however many evaluation seeds it has); with one, the evaluation seeds themselves."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "mdl_probe", Path(__file__).resolve().parents[1] / "scripts" / "mdl_probe.py")
    mdl_probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mdl_probe)
    pairs = [1.0, 1.2, 0.8, -1.0, -1.1, -0.9]  # 2 pre-training seeds x 3 evaluation seeds
    assert mdl_probe.units_of(pairs, 2, 3) == pytest.approx([1.0, -1.0])
    assert mdl_probe.units_of(pairs[:3], 1, 3) == pairs[:3]
