"""`electra-bench history add|plot|show` as a CI job calls them, and one-line errors for bad input."""

import json
import subprocess
import sys

from history_records import BASELINE, FIXTURE_RUN, ROOT


def cli(*args):
    return subprocess.run([sys.executable, "-m", "electra_bench.cli", *args], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)


def one_line_error(proc, *needles):
    assert proc.returncode == 2 and "Traceback" not in proc.stderr + proc.stdout
    lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    for n in needles:
        assert n in lines[0], lines[0]


def test_add_then_plot_and_show_against_the_committed_baseline(tmp_path):
    store = tmp_path / "history.jsonl"
    added = cli("history", "add", str(FIXTURE_RUN), "--store", str(store), "--branch", "main")
    assert added.returncode == 0, added.stderr
    assert added.stdout.startswith(f"{store}: added 326eda2 (run {FIXTURE_RUN.name}, config ")
    again = cli("history", "add", str(FIXTURE_RUN), "--store", str(store), "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["added"] is False
    assert len(store.read_text().splitlines()) == 1

    plot = cli("history", "plot", "--store", str(store), "--baseline", str(BASELINE), "--out", str(tmp_path / "p"))
    assert plot.returncode == 0, plot.stderr
    assert plot.stdout.split() == [str(tmp_path / "p" / "history.png"), str(tmp_path / "p" / "history.svg")]
    show = cli("history", "show", "--store", str(store), "--baseline", str(BASELINE), "--plot-url", "history.png")
    assert show.returncode == 0, show.stderr
    assert show.stdout.startswith("### electra-bench regression: PASS") and "branch `main`" in show.stdout
    trend = cli("history", "show", "--store", str(store), "--format", "json")
    assert json.loads(trend.stdout)["records"][0]["status"] == "no baseline"


def test_the_baseline_file_is_a_plot_input(tmp_path):
    """What `history RUN...` refused ("no such run directory"): the one reference CI has."""
    proc = cli("history", "plot", str(BASELINE), str(FIXTURE_RUN), "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "history.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bad_input_is_one_line(tmp_path):
    store = tmp_path / "history.jsonl"
    store.write_text('{"kind": "electra-bench-history"}\n{broken\n')
    one_line_error(cli("history", "show", "--store", str(store)), f"{store}:1: history record schema_version")
    one_line_error(cli("history", "add", str(tmp_path / "absent"), "--store", str(store)), "no such run directory")
    one_line_error(cli("history", "plot", "--out", str(tmp_path)), "no history records to show")
    one_line_error(cli("history", "add", str(FIXTURE_RUN), "--store", str(tmp_path / "s"), "--date", "yesterday"),
                   "--date 'yesterday' is not an ISO 8601 date")
    # the form before the subcommands says what replaced it
    one_line_error(cli("history", str(FIXTURE_RUN), "--out", str(tmp_path)), "history plot RUN... --out DIR",
                   "history add RUN --store FILE")
