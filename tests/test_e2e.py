"""The main job end to end through the CLI, as CI and a new user run it (slow: minutes).

CI's quick compare runs through the drop-in CI recipe (examples/ci/regression.sh: compare --quick, check
against the committed baseline, history add, history plot, history show), so every `make test` (and so
.ci/run) exercises the recipe; the quick compare is not run a second time, the history steps add seconds.
EB_CI_OUT and EB_CI_STORE, when set (.ci/run sets them), say where the recipe publishes and which store
it appends to; otherwise both live in the test's temporary directory."""

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / "results" / "baselines" / "compare-quick.json"
RECIPE = ROOT / "examples" / "ci" / "regression.sh"


def cli(*args):
    return subprocess.run([sys.executable, "-m", "electra_bench.cli", *args], capture_output=True, text=True,
                          timeout=1800)


@pytest.mark.slow
def test_compare_quick_through_the_ci_recipe_then_report_and_rerun(tmp_path):
    results, out = tmp_path / "results", Path(os.environ.get("EB_CI_OUT") or tmp_path / "ci-out")
    store = Path(os.environ.get("EB_CI_STORE") or tmp_path / "ci-history" / "history.jsonl")
    before = len(store.read_text().splitlines()) if store.is_file() else 0
    env = {**os.environ, "ELECTRA_BENCH": f"{sys.executable} -m electra_bench.cli", "EB_RESULTS": str(results),
           "EB_STORE": str(store), "EB_OUT": str(out), "EB_BASELINE": str(BASELINE)}
    env.pop("EB_RUN", None)
    proc = subprocess.run(["bash", str(RECIPE)], env=env, capture_output=True, text=True, timeout=1800, cwd=ROOT)
    # exit 0: the quick run is within the committed baseline's tolerances (CI's regression check)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = results / "ci-quick"
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
    summary = json.loads((run / "summary.json").read_text())
    assert summary["schema_version"] == 4
    # the statistics: the Multi-Bootstrap over stored per-example predictions, a CI on every point
    stats = summary["protocols"]["probe"]["statistics"]
    assert stats["method"] == "multi-bootstrap" and stats["note"] is None and (run / "predictions" / "labels").is_dir()
    assert all(p["ci"][0] <= p["estimate"] <= p["ci"][1] for p in stats["points"])
    assert summary["verdict"]["ci"] is not None and "95% CI" in (run / "report.md").read_text()
    # both objectives learned at the quick budget, by their held-out diagnostics, for every seed
    for objective in ("mlm", "rtd"):
        assert [r["learned"] for r in summary["learning"][objective]["runs"]] == [True, True], \
            summary["learning"][objective]["runs"][0]["flags"]

    # what the recipe published: the check, this commit appended to the store, the plot, the trend
    assert (out / "check.txt").read_text().startswith(f"check ci-quick against {BASELINE}: OK")
    lines = store.read_text().splitlines()
    assert len(lines) == before + 1
    record = json.loads(lines[-1])
    assert record["run_id"] == "ci-quick" and record["commit"] == prov["git"]["commit"]
    assert record["timings"]["wall_s"] > record["timings"]["pretrain_s"] > 0 and record["load"] is not None
    assert (out / "summary.md").read_text().startswith("### electra-bench regression: PASS")
    assert (out / "history.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and (out / "history.svg").is_file()
    rows = list(csv.DictReader((out / "trend.csv").open()))
    assert len(rows) == before + 1 and rows[-1]["status"] == "pass"
    assert json.loads((out / "trend.json").read_text())["records"][-1]["failures"] == []

    # the same command again reuses everything: no new scores, same summary numbers
    n_scores = len((run / "scores.jsonl").read_text().splitlines())
    again = cli("compare", "--quick", "--results", str(results), "--run-id", "ci-quick", "--json")
    assert again.returncode == 0, again.stderr[-3000:]
    assert len((run / "scores.jsonl").read_text().splitlines()) == n_scores

    for fmt in ("md", "csv", "latex"):
        rep = cli("report", str(run), "--format", fmt)
        assert rep.returncode == 0 and rep.stdout.strip(), rep.stderr
