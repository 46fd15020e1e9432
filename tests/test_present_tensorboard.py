"""TensorBoard event files, read back with TensorBoard's own reader (EventAccumulator): pre-training mirrors
log.jsonl (every numeric field against steps and against FLOPs), a resumed run shows each step once, a
compare run writes its score-vs-FLOPs curves per objective and task, and without the tensorboard package
nothing is written and nothing fails."""

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402

from electra_bench.store import atomic_io, event_files  # noqa: E402
from electra_bench.cli import main  # noqa: E402
from electra_bench.data.task_sources import load_tasks  # noqa: E402
from electra_bench.experiments.compare import work_done, write_outputs  # noqa: E402
from electra_bench.store.layout import PretrainLayout, RunLayout  # noqa: E402
from electra_bench.store.runs import open_run  # noqa: E402
from electra_bench.pretrain import tensorboard_log  # noqa: E402

FIXTURE_RUN = Path(__file__).resolve().parent / "fixtures" / "runs" / "compare-tiny-quick-dcf2017d"
MICRO = ["--preset", "tiny", "--seq-len", "32", "--batch-size", "8", "--vocab-size", "300", "--quiet"]


def summarise(run_dir: Path) -> dict:
    """What a compare run writes when it finishes (summary, plots, report, curves), on a copy of a run."""
    config = json.loads((run_dir / "config.json").read_text())
    with open_run(run_dir.parent, run_dir.name, config, create=False) as run:
        return write_outputs(run, {t.spec.name: t.spec for t in load_tasks(None, None)}, "measured", work_done([]))


def read(directory: Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar series of a directory's event files, as TensorBoard loads them."""
    acc = EventAccumulator(str(directory), size_guidance={"scalars": 0})  # 0: keep every point
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    words = "the cat sat on a mat while dogs ran past old trees near quiet rivers at dawn".split()
    lines = [" ".join(words[(d * 7 + s * 3 + i * i) % len(words)] for i in range(12)) + "."
             for d in range(50) for s in range(6)]
    path = tmp_path_factory.mktemp("corpus") / "c.txt"
    path.write_text("\n".join(lines))
    return path


@pytest.mark.parametrize("objective", ["mlm", "rtd"])
def test_pretraining_writes_its_log_as_scalars_against_steps_and_flops(tmp_path, corpus, objective):
    out = tmp_path / "run"
    r = CliRunner().invoke(main, ["pretrain", "--objective", objective, "--budget", "1.2e10", "--corpus",
                                  str(corpus), "--out", str(out), "--log-every", "2", *MICRO])
    assert r.exit_code == 0, r.output
    rows = atomic_io.read_jsonl(PretrainLayout(out).log)
    series = read(PretrainLayout(out).tensorboard)
    expected = {"train/loss", "schedule/lr", "speed/tokens_per_s", "speed/mfu", "diag/mlm_gain_nats",
                f"train/{'mlm' if objective == 'mlm' else 'disc'}_loss"}
    if objective == "rtd":
        expected |= {"diag/disc_auc"}
    assert expected <= set(series), sorted(series)
    assert {f"{event_files.FLOPS_AXIS}/{t}" for t in expected} <= set(series)
    for key, t in (("loss", "train/loss"), ("lr", "schedule/lr"), ("diag/mlm_gain_nats", "diag/mlm_gain_nats")):
        logged = [(r["step"], r[key]) for r in rows if key in r]
        assert [s for s, _ in series[t]] == [s for s, _ in logged]  # every row once, in order
        assert [v for _, v in series[t]] == pytest.approx([v for _, v in logged], rel=1e-6)  # float32
        by_flops = series[f"{event_files.FLOPS_AXIS}/{t}"]
        assert [s for s, _ in by_flops] == [round(r["flops"] / 1e6) for r in rows if key in r]


def test_a_resumed_run_shows_each_step_once_with_the_rows_it_logged_last(tmp_path):
    out = PretrainLayout(tmp_path / "run")
    out.root.mkdir()
    for step in range(0, 51, 10):  # the first attempt logs to step 50...
        row = {"step": step, "flops": step * 1e9, "fraction": step / 100, "loss": 10.0 - step / 10}
        atomic_io.append_jsonl(out.log, row)
        tensorboard_log.mirror(out, row)
    kept = [r for r in atomic_io.read_jsonl(out.log) if r["step"] <= 30]  # ...the resume cuts the log to 30
    out.log.write_text("".join(json.dumps(r) + "\n" for r in kept))
    for step in range(40, 101, 10):  # ...and logs the rest again, here with other values
        row = {"step": step, "flops": step * 1e9, "fraction": step / 100, "loss": 100.0 + step}
        atomic_io.append_jsonl(out.log, row)
        tensorboard_log.mirror(out, row)
    loss = read(out.tensorboard)["train/loss"]
    assert [s for s, _ in loss] == list(range(0, 101, 10))
    assert [v for _, v in loss] == [10.0, 9.0, 8.0, 7.0] + [100.0 + s for s in range(40, 101, 10)]
    assert len(list(out.tensorboard.glob("events.out.tfevents.*"))) == 1


def test_a_compare_run_writes_its_curves_per_objective_and_task(tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(FIXTURE_RUN, run_dir)
    tasks = [t.spec.name for t in load_tasks(None, None)]
    summary = summarise(run_dir)
    block = summary["protocols"][summary["main_protocol"]]
    points = {(p["objective"], p["fraction"]): p["score"]["per_task"] for p in block["points"]}
    for objective in ("mlm", "rtd"):
        series = read(RunLayout(run_dir).tensorboard / objective)
        assert set(series) == {"score/suite"} | {f"score/{t}" for t in tasks}
        curve = block["curves"][objective]  # the untrained encoder at 0 FLOPs, then every checkpoint
        assert [s for s, _ in series["score/suite"]] == [round(c["train_flops"] / 1e6) for c in curve]
        assert [v for _, v in series["score/suite"]] == pytest.approx([c["score"] for c in curve], rel=1e-6)
        for task in tasks:
            want = [points[(c["objective"], c["fraction"])][task] for c in curve]
            assert [v for _, v in series[f"score/{task}"]] == pytest.approx(want, rel=1e-6)
    summarise(run_dir)  # written anew, never appended
    assert len(read(RunLayout(run_dir).tensorboard / "mlm")["score/suite"]) == len(block["curves"]["mlm"])


def test_without_the_package_nothing_is_written_and_nothing_fails(tmp_path, corpus, monkeypatch):
    monkeypatch.setattr(event_files, "available", lambda: False)
    out = tmp_path / "run"
    r = CliRunner().invoke(main, ["pretrain", "--objective", "mlm", "--budget", "1.2e10", "--corpus", str(corpus),
                                  "--out", str(out), *MICRO])
    assert r.exit_code == 0, r.output
    assert PretrainLayout(out).log.is_file() and not PretrainLayout(out).tensorboard.exists()
    run_dir = tmp_path / "compare"
    shutil.copytree(FIXTURE_RUN, run_dir)
    summarise(run_dir)
    assert (run_dir / "summary.json").is_file() and not RunLayout(run_dir).tensorboard.exists()
