"""`electra-bench report RUN --write`: a finished compare run's summary.json, report.txt/.md and plots rebuilt
from what it stores, as this version computes them (how the committed runs are re-reported); its scores,
config and history untouched."""

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from electra_bench import cli

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "runs" / "compare-tiny-quick-dcf2017d"


def test_report_write_rebuilds_the_outputs_and_nothing_else(tmp_path):
    run = tmp_path / FIXTURE.name
    shutil.copytree(FIXTURE, run)
    before = {p: (run / p).read_bytes() for p in ("config.json", "scores.jsonl")}
    (run / "summary.json").write_text(json.dumps({"schema_version": 1}))  # an old summary to replace
    r = CliRunner().invoke(cli.main, ["report", str(run), "--write"])
    assert r.exit_code == 0, r.output
    summary = json.loads((run / "summary.json").read_text())
    assert summary["schema_version"] == 4 and summary["run_id"] == FIXTURE.name
    assert "Verdict:" in (run / "report.txt").read_text() and (run / "report.md").read_text().startswith("| Model")
    assert {p.name for p in (run / "plots").glob("*.png")} >= {"score_vs_flops.png", "tasks.png"}
    assert r.output.strip() and "Verdict:" in r.output  # and the report is printed as usual
    assert {p: (run / p).read_bytes() for p in before} == before
