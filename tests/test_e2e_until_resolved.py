"""`compare --until-resolved` end to end through the CLI on the quick budget (slow: the quick compare's
pre-training three times per objective instead of twice). Kept as small as the procedure allows: one task,
one evaluation seed, looks at 2 and 3 pre-training seeds."""

import json
import subprocess
import sys

import pytest

ARGS = ("compare", "--quick", "--until-resolved", "--max-pretrain-seeds", "3", "--tasks", "rt-polarity",
        "--seeds", "1", "--run-id", "ur", "--quiet")


def cli(*args):
    return subprocess.run([sys.executable, "-m", "electra_bench.cli", *args], capture_output=True, text=True,
                          timeout=3600)


@pytest.mark.slow
def test_until_resolved_adds_seeds_look_by_look_and_resumes(tmp_path):
    proc = cli(*ARGS, "--results", str(tmp_path))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = tmp_path / "ur"
    config = json.loads((run / "config.json").read_text())
    assert config["until_resolved"] == {"first": 2, "batch": 2, "max_pretrain_seeds": 3}
    summary = json.loads((run / "summary.json").read_text())
    seq = summary["verdict"]["sequential"]
    assert seq["schedule"] == [2, 3] and seq["planned"] == 2 and seq["finished"]
    taken = [look["n_pretrain_seeds"] for look in seq["looks"]]
    assert taken == ([2] if seq["stopped"] and seq["deciding"] == 0 else [2, 3])
    # one compare invocation per look, each adding the next batch of seeds to the same run
    history = [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines()]
    assert len(history) == len(taken) and config["pretrain_seeds"] == taken[-1]
    for objective in ("mlm", "rtd"):
        assert sorted(p.name for p in (run / "pretrain" / objective).iterdir()) == [f"seed-{k}" for k in range(taken[-1])]
    report = (run / "report.txt").read_text()
    assert f"Sequential (compare --until-resolved): {len(taken)} look" in report and "O'Brien-Fleming" in report
    if not seq["stopped"]:  # the quick budget on one task may leave both at the untrained encoder: that comes first
        verdict = summary["verdict"]
        assert verdict["kind"] in ("not_resolved", "too_small"), verdict
        if verdict["kind"] == "not_resolved":
            assert "not resolved with 3 pre-training seeds, the maximum" in verdict["verdict"]
        assert "adding pre-training seeds up to 3 per objective" not in proc.stdout  # --quiet

    # the same command again: nothing left to do, the same decision
    n_scores = len((run / "scores.jsonl").read_text().splitlines())
    again = cli(*ARGS, "--results", str(tmp_path), "--json")
    assert again.returncode == 0, again.stderr[-3000:]
    assert len((run / "scores.jsonl").read_text().splitlines()) == n_scores
    assert json.loads(again.stdout)["verdict"]["sequential"]["looks"] == seq["looks"]


def test_max_pretrain_seeds_needs_until_resolved_and_a_spread_to_start_from(tmp_path):
    bad = cli("compare", "--quick", "--max-pretrain-seeds", "4", "--results", str(tmp_path))
    assert bad.returncode != 0 and "--max-pretrain-seeds goes with --until-resolved" in bad.stderr
    one = cli("compare", "--quick", "--until-resolved", "--pretrain-seeds", "1", "--results", str(tmp_path),
              "--dry-run")
    assert one.returncode != 0 and "--pretrain-seeds of at least 2" in one.stderr
    dry = cli("compare", "--quick", "--until-resolved", "--max-pretrain-seeds", "6", "--results", str(tmp_path),
              "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr[-2000:]
    jobs = [j["id"] for j in json.loads(dry.stdout)["jobs"]]
    assert "pretrain/rtd/seed-5" in jobs and "pretrain/rtd/seed-6" not in jobs  # sized for every look
    assert not any(tmp_path.iterdir())  # a dry run writes nothing
