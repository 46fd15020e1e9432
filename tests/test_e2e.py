"""The main job end to end through the CLI, as CI and a new user run it (slow: minutes)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

BASELINE = Path(__file__).resolve().parents[1] / "results" / "baselines" / "compare-quick.json"


def cli(*args):
    return subprocess.run([sys.executable, "-m", "electra_bench.cli", *args], capture_output=True, text=True,
                          timeout=1800)


@pytest.mark.slow
def test_compare_quick_then_report_check_and_rerun(tmp_path):
    proc = cli("compare", "--quick", "--results", str(tmp_path), "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout)
    runs = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert len(runs) == 1
    run = runs[0]
    for name in ("config.json", "provenance.json", "scores.jsonl", "summary.json"):
        assert (run / name).is_file(), name
    for objective in ("mlm", "rtd"):
        for seed in (0, 1):  # two pre-training seeds per objective
            ckpts = sorted((run / "pretrain" / objective / f"seed-{seed}" / "checkpoints").iterdir())
            assert len(ckpts) == 3  # tiny keeps 1/4, 1/2 and all of the budget
    pngs = list((run / "plots").glob("*.png"))
    assert pngs and all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    prov = json.loads((run / "provenance.json").read_text())
    assert prov["flop_convention"] == "measured" and prov["seeds"]["pretrain"] == [0, 1]
    assert set(prov["data_hashes"]) >= {"corpus_sha256", "tokenizer_sha256"} and prov["git"]
    assert summary["schema_version"] == 2
    # both objectives learned at the quick budget, by their held-out diagnostics, for every seed
    for objective in ("mlm", "rtd"):
        assert [r["learned"] for r in summary["learning"][objective]["runs"]] == [True, True], \
            summary["learning"][objective]["runs"][0]["flags"]

    # the same command again reuses everything: no new scores, same summary numbers
    n_scores = len((run / "scores.jsonl").read_text().splitlines())
    again = cli("compare", "--quick", "--results", str(tmp_path), "--json")
    assert again.returncode == 0, again.stderr[-3000:]
    assert len((run / "scores.jsonl").read_text().splitlines()) == n_scores

    for fmt in ("md", "csv", "latex"):
        rep = cli("report", str(run), "--format", fmt)
        assert rep.returncode == 0 and rep.stdout.strip(), rep.stderr

    # CI's regression check against the committed baseline of the quick run
    if not BASELINE.is_file():
        pytest.skip("no committed baseline yet")
    chk = cli("check", str(run), "--baseline", str(BASELINE))
    assert chk.returncode == 0, chk.stdout + chk.stderr
