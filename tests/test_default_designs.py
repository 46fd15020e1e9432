"""scripts/default_designs.py (issue 48's comparison of default designs): the plan's power read off a
committed run's statistics, rising with the seeds, and its wall-time arithmetic."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

import default_designs  # noqa: E402

RUN = Path(__file__).resolve().parents[1] / "results" / "multiseed-ebs3"


def test_power_rises_with_seeds_and_matches_the_runs_own_resolution():
    rows = default_designs.designs(RUN, "ms", [2, 4, 8], flops_per_s=1e10, score_s={"probe": 30.0})
    final = [r for r in rows if r["fraction"] == 1.0]
    p = [r["rtd_minus_mlm"][1] for r in final]
    assert p[0] < p[1] < p[2] and p[1] > 0.5  # the 4-seed run resolved RTD - MLM (+1.5, CI [+0.8, +2.2])
    assert all(r["mlm_vs_untrained"][1] > 0.95 for r in final)
    quarter = next(r for r in rows if r["fraction"] == 0.25 and r["n"] == 2)
    assert quarter["rtd_vs_untrained"][1] < 0.5  # at 3.0e13 RTD - untrained was not resolved with 4 seeds
    # n runs of both objectives on 2 workers, then 3 encoders per seed scored on 2 workers
    assert quarter["minutes"] * 60 == 2 * quarter["train_flops"] / 1e10 + 3 * 2 * 30.0 / 2


def test_a_missing_run_is_one_line(tmp_path, capsys):
    assert default_designs.main([str(tmp_path)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_beating_the_untrained_encoder_needs_a_positive_difference():
    """A measured difference below 0 is resolved often (RTD - untrained at 3.0e12 in ms-ebs3-1.2e13 is
    negative), but never as "beats": the design table must not count it towards both beating untrained."""
    run = Path(__file__).resolve().parents[1] / "results" / "ms-ebs3-1.2e13"
    rows = default_designs.designs(run, "ms", [8], flops_per_s=1e10, score_s={"probe": 30.0})
    negative = [r for r in rows if r["rtd_vs_untrained"][0] < -0.5]
    assert negative
    assert all(r["rtd_vs_untrained"][1] < 0.025 for r in negative)
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    d = next(v for v in summary["protocols"]["probe"]["statistics"]["vs_untrained"]
             if v["objective"] == "rtd" and v["estimate"] < -0.5)
    assert default_designs._power(d, 8) > 0.5  # the same difference, in its own direction, is resolved
