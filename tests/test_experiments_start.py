"""What compare says and asks before it starts, and where it says its outputs went (issue 40): a budget is
echoed in FLOPs against its mode's default with the wall time where it runs; on a CPU a budget far beyond
the mode's default needs --yes (or a yes at a terminal); the end names the run directory and the plots."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from electra_bench import presets
from electra_bench.errors import BenchError
from electra_bench.experiments.compare import BIG_BUDGET, CompareSpec, confirm, start
from electra_bench.flops import step_flops


def _spec(**kw):
    args = dict(preset=None, budget=None, quick=False, convention="measured", corpus=None, source=None, tasks=None,
                seeds=None, protocol=None, device="cpu")
    return CompareSpec.resolve(**{**args, **kw})


@pytest.mark.parametrize("kw, times", [
    ({}, 1.0),  # the default mode, the long mode, the quick mode: their own budgets
    ({"long": True}, 1.0),
    ({"quick": True}, 1.0),
    ({"long": True, "budget": "1.2e14"}, 2.0),  # the README's committed multi-seed run
])
def test_the_documented_modes_start_without_asking(tmp_path, kw, times):
    begin = start(_spec(**kw), tmp_path, "r", quiet=True)
    assert begin.times_default == pytest.approx(times) and begin.on_this_cpu and not begin.needs_yes
    assert confirm(begin, yes=False, ask=None) is False  # no question, no refusal


def test_a_percentage_is_echoed_as_a_share_of_the_papers_schedule_and_needs_yes_on_a_cpu(tmp_path):
    """Issue 40: `--budget 150%` started a 1.93e14-FLOP run, 16x the default, without a word."""
    begin = start(_spec(budget="150%"), tmp_path, "r", quiet=True)
    assert begin.times_default > BIG_BUDGET and begin.needs_yes
    assert begin.line.startswith("r: 1.9e14 FLOPs per objective (16.1x the default 1.2e13; a percentage is a share "
                                 "of the paper's full schedule for tiny, 100% = 1.3e14 FLOPs), 4 pre-training seed(s)")
    assert "; about " in begin.line and "on 2 CPU worker(s) (at the speeds measured here)" in begin.line
    with pytest.raises(BenchError, match=r"^not started: r: 1\.9e14 FLOPs .* pass --yes to start it"):
        confirm(begin, yes=False, ask=None)  # no terminal to ask at
    assert confirm(begin, yes=True, ask=None) is False  # --yes: nothing asked
    asked = []
    assert confirm(begin, yes=False, ask=lambda q: asked.append(q) or True) is True
    assert asked and asked[0].startswith(begin.line)  # the question shows what would start
    with pytest.raises(BenchError, match="not started"):
        confirm(begin, yes=False, ask=lambda q: False)
    quick = start(_spec(quick=True, budget="1.2e13"), tmp_path, "r", quiet=True)
    assert quick.times_default == pytest.approx(6.0) and quick.needs_yes  # 6x what --quick is sized for


def test_a_gpu_target_never_asks(tmp_path):
    begin = start(_spec(budget="150%", device="auto", device_kind="h100"), tmp_path, "r", quiet=True)
    assert not begin.on_this_cpu and not begin.needs_yes


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "electra_bench.cli", *map(str, args)], capture_output=True,
                          text=True, timeout=600, stdin=subprocess.DEVNULL)


def test_without_a_terminal_a_big_budget_is_one_line_and_creates_nothing(tmp_path):
    proc = _cli("compare", "--budget", "150%", "--results", tmp_path / "results")
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith("error: not started: ") and "pass --yes to start it" in lines[0]
    assert not (tmp_path / "results").exists()


def test_compare_says_what_it_starts_and_where_its_run_and_plots_went(tmp_path, word_corpus):
    micro = presets.resolve("tiny", presets.Overrides(batch_size=8, seq_len=32, vocab_size=300))
    budget = 8 * max(step_flops(micro.for_objective(o), o).flops_per_step for o in ("mlm", "rtd"))
    results = tmp_path / "results"
    proc = _cli("compare", "--quick", "--budget", f"{budget:.6g}", "--batch-size", 8, "--seq-len", 32, "--vocab-size",
                300, "--corpus", word_corpus, "--tasks", "rt-polarity", "--seeds", 1, "--pretrain-seeds", 1, "--jobs", 1,
                "--results", results)
    assert proc.returncode == 0, proc.stderr
    run = next(results.iterdir())
    lines = proc.stderr.splitlines()
    said = next(ln for ln in lines if ln.startswith(f"{run.name}: "))
    assert "FLOPs per objective" in said and "on 1 CPU worker(s) (at the speeds measured here)" in said
    assert "jobs stored" not in said  # a new run: the whole graph is what is left
    assert lines[-2] == f"run: {run}/ (report.txt, report.md, summary.json)"
    assert lines[-1].startswith(f"plots: {run / 'plots'}/ (") and "score_vs_flops" in lines[-1]
    assert (run / "report.txt").is_file() and (run / "plots" / "score_vs_flops.png").is_file()
    rerun = _cli(*proc.args[3:])  # the same command again: everything is stored, and it says so
    assert rerun.returncode == 0, rerun.stderr
    said = next(ln for ln in rerun.stderr.splitlines() if ln.startswith(f"{run.name}: "))
    stored = re.search(r"; (\d+) of (\d+) jobs stored, about 0 s left$", said)
    assert stored and stored[1] == stored[2] and int(stored[1]) >= 3, said  # 2 pre-training runs, their scores
