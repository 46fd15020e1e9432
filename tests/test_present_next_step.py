"""The report's last lines when the verdict cannot rank RTD against MLM (present/next_step.py): the plan's
seeds and the exact commands, which the CLI parses back into this run's config with more seeds."""

import json
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from electra_bench import cli
from electra_bench.cli import experiment as cli_experiment
from electra_bench.experiments import compare as compare_mod
from electra_bench.present import report
from electra_bench.present.next_step import compare_args, next_step_lines
from electra_bench.store.runs import load_run

RESULTS = Path(__file__).resolve().parent.parent / "results"


def parsed_spec(args: list[str], monkeypatch):
    """The CompareSpec (and run id) `electra-bench compare ARGS` resolves to, read where the dry run plans."""
    seen = {}

    def capture(spec, root, run_id, *a, **k):
        seen["spec"], seen["run_id"] = spec, run_id
        return {"jobs": []}

    monkeypatch.setattr(compare_mod, "plan_only", capture)
    monkeypatch.setattr(cli_experiment, "show_graph", lambda plan, as_json: None)
    result = CliRunner().invoke(cli.main, ["compare", *args, "--dry-run"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return seen["spec"], seen["run_id"]


def as_stored(spec) -> dict:
    """A spec's identity as config.json holds it (tuples as lists)."""
    return json.loads(json.dumps(spec.to_dict()))


@pytest.mark.parametrize("run", ["long-cpu", "longer-cpu", "multiseed-cpu", "multiseed-ebs3"])
def test_the_command_is_the_runs_own_config_with_more_seeds(run, monkeypatch):
    config = json.loads((RESULTS / run / "config.json").read_text())
    spec, run_id = parsed_spec(compare_args(config) + ["--pretrain-seeds", "9", "--run-id", run], monkeypatch)
    assert as_stored(spec) == {**config, "pretrain_seeds": 9} and run_id == run


def test_a_reading_and_a_switch_survive_the_round_trip(monkeypatch):
    config = json.loads((RESULTS / "multiseed-ebs3" / "config.json").read_text())
    config = {**config, "readings": ["zeroshot"], "overrides": {**config["overrides"], "disallow_correct": True}}
    spec, _ = parsed_spec(compare_args(config) + ["--pretrain-seeds", "4"], monkeypatch)
    assert as_stored(spec) == config


def test_the_last_lines_name_the_commands_that_would_resolve_it():
    lines = report.render([load_run(str(RESULTS / "longer-cpu"))], "table", width=100).strip().splitlines()
    assert any(line.startswith("Next: about 9 pre-training seeds per objective would resolve RTD - MLM = +1.7")
               for line in lines[-6:-2])  # the sentence wraps; the commands do not
    more, looks = shlex.split(lines[-2][2:]), shlex.split(lines[-1][2:])
    assert more[:2] == ["electra-bench", "compare"] and more[-4:] == ["--pretrain-seeds", "9", "--run-id", "longer-cpu"]
    assert "--until-resolved" in looks and looks[looks.index("--max-pretrain-seeds") + 1] == "9"
    md = report.render([load_run(str(RESULTS / "longer-cpu"))], "md").strip().splitlines()
    assert "--until-resolved" in md[-1]


def test_a_ranked_verdict_has_no_next_step():
    summary = json.loads((RESULTS / "multiseed-ebs3" / "summary.json").read_text())
    assert summary["verdict"]["kind"] == "ranked" and next_step_lines(summary) == []
    out = report.render([load_run(str(RESULTS / "multiseed-ebs3"))], "table", width=160)
    assert "Next:" not in out
