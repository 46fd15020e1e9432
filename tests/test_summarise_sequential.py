"""The group-sequential test of compare --until-resolved (summarise/sequential.py): its boundaries against
gsDesign's published ones and a Monte Carlo of the process they are for, the looks a run's scores allow,
and the verdict and report lines they give. The driver end to end: tests/test_e2e_until_resolved.py."""

import json

import numpy as np
import pytest

from electra_bench.summarise import sequential, summary
from electra_bench.present.summary_text import headline_lines
from electra_bench.summarise.invariants import invariant_violations
from electra_bench.summarise.bootstrap import Replicates


@pytest.mark.parametrize("fractions,published", [
    ([1.0], [1.960]),
    ([0.5, 1.0], [2.963, 1.969]),
    ([0.25, 0.5, 0.75, 1.0], [4.333, 2.963, 2.359, 2.014]),  # gsDesign sfLDOF, k=4, alpha 0.025 one-sided
    ([0.2, 0.4, 0.6, 0.8, 1.0], [4.877, 3.357, 2.680, 2.290, 2.031]),
])
def test_boundaries_are_gsdesigns_obrien_fleming_type_spending(fractions, published):
    assert sequential.boundaries(fractions) == pytest.approx(published, abs=2e-3)


def test_the_boundaries_spend_five_percent_on_the_process_they_are_for():
    """Z_k of a growing sample (independent increments): crossing +-c_k at any of 4 looks, under the null."""
    rng = np.random.default_rng(0)
    t = np.array([0.25, 0.5, 0.75, 1.0])
    c = np.array(sequential.boundaries(list(t)))
    steps = rng.standard_normal((400_000, 4)) * np.sqrt(np.diff(np.r_[0, t]))
    z = np.cumsum(steps, axis=1) / np.sqrt(t)
    crossed = np.abs(z) >= c
    first = crossed.any(1)
    assert first.mean() == pytest.approx(0.05, abs=0.002)
    assert crossed[:, 0].mean() == pytest.approx(2 * sequential.spent(0.25), abs=1e-4)


def test_schedule_and_refusals():
    assert sequential.schedule(2, 8) == [2, 4, 6, 8]
    assert sequential.schedule(3, 8) == [3, 6, 8]
    assert sequential.schedule(2, 5, 1) == [2, 3, 4, 5]
    for bad in ((1, 8), (4, 4), (4, 2)):
        with pytest.raises(ValueError):
            sequential.schedule(*bad)
    assert [sequential.fmt_level(x) for x in (0.95, 0.997, 1 - 2e-5)] == ["95%", "99.7%", "99.998%"]


def replicates(diffs: np.ndarray, shared_sd: float = 0.1, B: int = 200) -> Replicates:
    rng = np.random.default_rng(1)
    n = len(diffs)
    dev = {"rtd": rng.normal(0, shared_sd, B) + rng.normal(0, 0.2, (n, B)), "mlm": np.zeros((n, B))}
    values = {"rtd": diffs, "mlm": np.zeros(n)}
    return Replicates(["mlm", "rtd"], {a: list(range(n)) for a in values}, B, True,
                      {None: {a: float(np.mean(v)) for a, v in values.items()}},
                      {None: {a: dict(enumerate(map(float, v))) for a, v in values.items()}}, {None: dev}, None)


def test_looks_stop_at_the_first_crossing_and_only_then():
    design = {"first": 2, "batch": 2, "max_pretrain_seeds": 8}
    coef = {"rtd": 1.0, "mlm": -1.0}
    clear = sequential.looks(replicates(np.array([3.0, 3.1, 2.9, 3.05, 2.95, 3.0, 3.02, 2.98])), coef, design)
    assert clear["stopped"] and clear["finished"] and clear["taken"] == 2 and clear["deciding"] == 1
    assert [k["n_pretrain_seeds"] for k in clear["looks"]] == [2, 4]
    assert not clear["looks"][0]["resolved"]  # 2 seeds and a 7e-06 threshold: t with 1 df cannot
    assert clear["looks"][1]["level"] > 0.996
    noise = sequential.looks(replicates(np.random.default_rng(3).normal(0, 1, 8)), coef, design)
    assert not noise["stopped"] and noise["finished"] and noise["taken"] == 4
    part = sequential.looks(replicates(np.random.default_rng(3).normal(0, 1, 5)), coef, design)
    assert part["taken"] == 2 and not part["finished"]  # 5 seeds: looks at 2 and 4, the next at 6


def test_a_sequential_run_is_judged_at_its_look_and_says_so(tmp_path):
    from test_present_score_definition import make_run

    run = make_run(tmp_path, {("init", 0.0): 0.5, ("mlm", 1.0): 0.6, ("rtd", 1.0): 0.75}, seeds=(0, 1, 2, 3))
    config = json.loads(run.layout.config.read_text())
    config["until_resolved"] = {"first": 2, "batch": 2, "max_pretrain_seeds": 6}
    run.layout.config.write_text(json.dumps(config))
    s = summary.build_summary(run)
    v = s["verdict"]
    seq = v["sequential"]
    assert seq["schedule"] == [2, 4, 6] and seq["taken"] >= 1
    look = seq["looks"][-1]
    assert v["ci"] == look["ci"] and v["n_pretrain_seeds"] == look["n_pretrain_seeds"]
    assert v["kind"] == ("ranked" if seq["stopped"] else "not_resolved")
    assert invariant_violations(s) == []
    lines = headline_lines(s)
    text = next(line for line in lines if line.startswith("Sequential (compare --until-resolved): "))
    assert f"{seq['taken']} look" in text and "at 2, 4, 6 pre-training seeds" in text and "O'Brien-Fleming" in text
    if seq["stopped"]:
        assert v["verdict"].startswith("RTD ahead of MLM (crossed the sequential boundary at look")
