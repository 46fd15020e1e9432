"""The drop-in CI recipe (examples/ci/regression.sh) on the committed quick run, without running a compare:
exit 0 and a PASS summary on the run itself, exit 1 with the regressed metric named on a deliberately
broken copy (and its record kept, so the trend shows it), exit 2 and nothing appended on an unlike run.
The GitHub Actions workflow and the make target call the same script. (tests/test_e2e.py runs the recipe
with a real compare --quick.)"""

import json
import os
import shutil
import subprocess
import sys

import pytest

from history_records import BASELINE, FIXTURE_RUN, ROOT

RECIPE = ROOT / "examples" / "ci" / "regression.sh"
WORKFLOW = ROOT / "examples" / "ci" / "github-actions.yml"


def recipe(tmp_path, run, **env):
    full = {**os.environ, "ELECTRA_BENCH": f"{sys.executable} -m electra_bench.cli", "EB_RUN": str(run),
            "EB_BASELINE": str(BASELINE), "EB_STORE": str(tmp_path / "store" / "history.jsonl"),
            "EB_OUT": str(tmp_path / "out"), **env}
    return subprocess.run(["bash", str(RECIPE)], env=full, capture_output=True, text=True, timeout=600, cwd=ROOT)


def broken_copy(tmp_path):
    """The quick run with MLM's final scores 5 points lower: a deliberately altered copy."""
    run = tmp_path / "broken-run"
    shutil.copytree(FIXTURE_RUN, run)
    rows = [json.loads(line) for line in (run / "scores.jsonl").read_text().splitlines()]
    for r in rows:
        if r["objective"] == "mlm" and r["fraction"] == 1.0:
            r["value"] -= 5.0
    (run / "scores.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return run


def test_the_recipe_passes_fails_and_publishes(tmp_path):
    ok = recipe(tmp_path, FIXTURE_RUN)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    out = tmp_path / "out"
    assert (out / "check.txt").read_text().startswith(f"check {FIXTURE_RUN.name} against")
    assert (out / "summary.md").read_text().startswith("### electra-bench regression: PASS")
    assert "electra-bench regression: PASS; published in" in ok.stdout
    for name in ("history.png", "history.svg", "trend.csv", "trend.json"):
        assert (out / name).stat().st_size > 0, name

    bad = recipe(tmp_path, broken_copy(tmp_path), EB_COMMIT="broken1", EB_NOTE="deliberately broken copy")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "REGRESSION" in bad.stdout
    summary = (out / "summary.md").read_text()
    assert summary.startswith("### electra-bench regression: FAIL")
    failing = next(par for par in summary.split("\n\n") if par.startswith("**"))
    assert "outside tolerance:** `mlm/margin`" in failing and "`mlm/score`" in failing
    assert "Note: deliberately broken copy" in summary
    trend = json.loads((out / "trend.json").read_text())
    assert [(r["commit"][:7], r["status"]) for r in trend["records"]] == [("326eda2", "pass"), ("broken1", "FAIL")]


def test_an_unlike_run_stops_before_anything_is_appended(tmp_path):
    run = tmp_path / "other-run"
    shutil.copytree(FIXTURE_RUN, run)
    cfg = json.loads((run / "config.json").read_text())
    (run / "config.json").write_text(json.dumps({**cfg, "budget": "4e12"}))
    proc = recipe(tmp_path, run)
    assert proc.returncode == 2
    assert "budget 4e12 (run) vs 2e12 (baseline)" in proc.stderr and "nothing appended" in proc.stderr
    assert not (tmp_path / "store" / "history.jsonl").exists()


def test_the_github_workflow_and_the_make_target_run_the_same_steps():
    yaml = pytest.importorskip("yaml")
    wf = yaml.safe_load(WORKFLOW.read_text())
    steps = wf["jobs"]["regression"]["steps"]
    runs = {s.get("name"): s.get("run", "") for s in steps}
    assert runs["Install"] == "make install" and "make ci-regression" in runs["Quick compare, check, history, plot, summary"]
    regression = next(s for s in steps if s.get("id") == "regression")
    assert regression["continue-on-error"] is True  # publish first ...
    assert steps[-1]["if"] == "steps.regression.outcome == 'failure'" and "exit 1" in steps[-1]["run"]  # ... then fail
    assert "GITHUB_STEP_SUMMARY" in runs["Job summary"]
    uploads = [s for s in steps if str(s.get("uses", "")).startswith("actions/upload-artifact")]
    assert uploads and "ci-out/" in uploads[0]["with"]["path"]
    env = wf["jobs"]["regression"]["env"]
    assert env["EB_STORE"] == "ci-history/history.jsonl" and env["EB_OUT"] == "ci-out"
    make = subprocess.run(["make", "-n", "ci-regression", "VENV=/nonexistent-venv"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert "bash examples/ci/regression.sh" in make.stdout, make.stdout + make.stderr
