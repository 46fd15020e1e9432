"""`electra-bench ablate`: compare's machinery over Table 5's objectives (the end-to-end test is slow)."""

import json

import pytest

from electra_bench import presets
from electra_bench.choices import OBJECTIVES
from electra_bench.errors import BenchError
from electra_bench.experiments.ablate import resolve_spec, run_ablate
from electra_bench.experiments.compare import CompareSpec
from electra_bench.flops import step_flops
from electra_bench.store.layout import RunLayout
from electra_bench.present import plots
from electra_bench.present.ablation_table import TABLE5, figure_ablation, render_table, table_rows

MICRO = (("batch_size", 8), ("seq_len", 32), ("vocab_size", 300))


def test_compare_run_ids_do_not_change():
    """The objectives field is left out of the identity at its default (this id is the one the code
    gave before the field existed)."""
    spec = CompareSpec(preset="tiny", budget="1.2e13", threads=1, pretrain_seeds=2, overrides=(("seq_len", 32),))
    assert spec.objectives == OBJECTIVES and "objectives" not in spec.to_dict()
    assert spec.run_id() == "compare-tiny-f8583e9b"
    other = CompareSpec(preset="tiny", budget="1.2e13", threads=1, pretrain_seeds=2, overrides=(("seq_len", 32),),
                        objectives=("rtd", "rtd-15"))
    assert other.to_dict()["objectives"] == ["rtd", "rtd-15"] and other.run_id() != spec.run_id()
    assert other.run_id("ablate").startswith("ablate-tiny-")


def test_resolve_defaults_to_table5_and_checks_names():
    common = dict(preset=None, budget=None, quick=True, convention="measured", corpus=None, source=None, tasks=None,
                  seeds=None, protocol=None, device="cpu")
    spec = resolve_spec(**common)
    assert spec.objectives == tuple(o for o, _, _ in TABLE5) and spec.pretrain_seeds == 1
    with pytest.raises(BenchError, match="unknown objective 'clm'"):
        resolve_spec(objectives=["rtd", "clm"], **common)
    with pytest.raises(BenchError, match="named twice"):
        resolve_spec(objectives=["rtd", "rtd"], **common)


def test_render_keeps_table5_layout():
    rows = [{"model": "ELECTRA", "paper_glue": 85.0, "paper_vs_bert": 2.8, "score": 61.2, "min": 60.0, "max": 62.0,
             "ours_vs_bert": 1.5, "train_flops": 1e12},
            {"model": "BERT", "paper_glue": 82.2, "paper_vs_bert": 0.0, "score": 59.7, "min": None, "max": None,
             "ours_vs_bert": 0.0, "train_flops": 1e12}]
    md = render_table(rows, "t", "md")
    assert "| ELECTRA | 85.0 | +2.8 | 61.2 | [60.0, 62.0] | +1.5 | 1e+12 |" in md
    text = render_table(rows, "t")
    assert "GLUE dev (paper, Base)" in text and "BERT" in text


@pytest.mark.slow
def test_ablate_end_to_end_at_a_tiny_budget(tmp_path, word_corpus):
    p = presets.resolve("tiny", presets.Overrides(**dict(MICRO)))
    objectives = tuple(o for o, _, _ in TABLE5)
    budget = 4 * max(step_flops(p.for_objective(o), o).flops_per_step for o in objectives)
    spec = CompareSpec(preset="tiny", budget=f"{budget:.6g}", corpus=str(word_corpus), tasks=("rt-polarity",),
                       seeds=1, protocol="probe", pretrain_seeds=1, probe_pool=120, probe_examples=80,
                       max_eval_examples=80, threads=1, overrides=MICRO, objectives=objectives, jobs=1)
    result, rendered = run_ablate(spec, tmp_path / "results", None, quiet=True)
    run = tmp_path / "results" / spec.run_id("ablate")
    layout = RunLayout(run)
    assert json.loads(layout.ablation.read_text()) == json.loads(json.dumps(result))
    rows = {r["objective"]: r for r in result["rows"]}
    assert list(rows) == list(objectives) + ["init"]
    for o in objectives:
        assert rows[o]["score"] is not None and 0 < rows[o]["train_flops"] <= budget
        assert rows[o]["flops_per_step"]["paper"] > 0 and rows[o]["flops_per_step"]["measured"] > 0
        # only the final checkpoint is scored
        assert (layout.pretrain(o, 0).checkpoint(1.0) / "model.safetensors").is_file()
    scored = {(json.loads(line)["objective"], json.loads(line)["fraction"]) for line in layout.scores.read_text().splitlines()}
    assert scored == {(o, 1.0) for o in objectives} | {("init", 0.0)}
    assert rows["mlm"]["ours_vs_bert"] == 0 and rows["rtd"]["paper_glue"] == 85.0
    assert "All-Tokens MLM" in rendered and "ELECTRA 15%" in rendered
    assert layout.report_md.read_text().count("\n|") >= 6
    # a rerun reuses everything
    n = len(layout.scores.read_text().splitlines())
    again, _ = run_ablate(spec, tmp_path / "results", None, quiet=True)
    assert len(layout.scores.read_text().splitlines()) == n and again["rows"] == result["rows"]


def _synthetic_run(root, name="ablate-tiny-0000", spread=1.0):
    """A finished ablation run's files, its rows built by `table_rows` from score rows we choose."""
    import pandas as pd

    from electra_bench.data.tasks import TaskSpec

    specs = {"t1": TaskSpec("t1", ("text",), ("a", "b"), False, ("accuracy",), "accuracy"),
             "t2": TaskSpec("t2", ("text",), ("a", "b"), False, ("accuracy",), "accuracy")}
    base = {"rtd": 62.0, "alltokens-mlm": 61.0, "replace-mlm": 60.0, "rtd-15": 59.0, "mlm": 58.0, "init": 50.0}
    rows = []
    for o, v in base.items():
        for fraction in ((0.0,) if o == "init" else (0.5, 1.0)):
            for seed in (0, 1, 2):
                for task, shift in (("t1", 0.0), ("t2", 2.0)):
                    rows.append({"objective": o, "fraction": fraction, "pretrain_seed": 0, "seed": seed,
                                 "task": task, "metric": "accuracy", "train_flops": 1e12 * fraction,
                                 "value": v + shift + spread * (seed - 1) - (10 if fraction == 0.5 else 0)})
    table = table_rows(pd.DataFrame(rows), specs, tuple(base)[:-1], {})
    result = {"run_id": name, "preset": "tiny", "budget_flops": 1e12, "flop_convention": "measured",
              "protocol": "probe", "tasks": list(specs), "aggregate": "suite mean", "rows": table}
    run = root / name
    run.mkdir()
    (run / "config.json").write_text("{}")
    (run / "ablation.json").write_text(json.dumps(result))
    return run, result


def test_rows_score_the_final_checkpoint_against_bert(tmp_path):
    _, result = _synthetic_run(tmp_path)
    rows = {r["objective"]: r for r in result["rows"]}
    assert list(rows) == [o for o, _, _ in TABLE5] + ["init"]
    # the mean of the two tasks' median over seeds at fraction 1.0 (the 0.5 checkpoint is 10 lower)
    assert rows["rtd"]["score"] == pytest.approx(63.0) and rows["init"]["score"] == pytest.approx(51.0)
    assert (rows["rtd"]["min"], rows["rtd"]["max"]) == (pytest.approx(62.0), pytest.approx(64.0))
    assert rows["rtd"]["ours_vs_bert"] == pytest.approx(4.0) and rows["rtd"]["paper_vs_bert"] == pytest.approx(2.8)
    assert rows["mlm"]["ours_vs_bert"] == 0 and rows["init"]["paper_glue"] is None


@pytest.mark.parametrize("fmt", ["table", "md", "csv", "latex"])
def test_report_renders_an_ablation_run_in_every_format(tmp_path, fmt):
    import subprocess
    import sys

    run, result = _synthetic_run(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "electra_bench.cli", "report", str(run), "--format", fmt],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    if fmt == "csv":
        import io

        import pandas as pd

        frame = pd.read_csv(io.StringIO(text))
        assert list(frame["objective"]) == [r["objective"] for r in result["rows"]]
        assert frame.loc[frame["objective"] == "rtd", "ours_vs_bert"].item() == pytest.approx(4.0)
    else:
        assert "All-Tokens MLM" in text and ("63.0" in text) and ("+4.0" in text)
        if fmt == "latex":
            assert r"ELECTRA 15\%" in text and r"\toprule" in text
        if fmt == "md":
            assert "| ELECTRA | 85.0 | +2.8 | 63.0 | [62.0, 64.0] | +4.0 | 1e+12 |" in text


def test_report_takes_one_kind_of_run_and_check_refuses_an_ablation(tmp_path):
    import subprocess
    import sys

    run, _ = _synthetic_run(tmp_path)
    other = tmp_path / "compare-x"
    other.mkdir()
    (other / "config.json").write_text("{}")
    (tmp_path / "b.json").write_text("{}")  # a baseline file is there: the refusal is the run's kind
    for args in (["report", str(run), str(other)], ["check", str(run), "--baseline", str(tmp_path / "b.json")]):
        proc = subprocess.run([sys.executable, "-m", "electra_bench.cli", *args], capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and "ablation run" in proc.stderr
    (run / "ablation.json").write_text('{"rows": []}')
    proc = subprocess.run([sys.executable, "-m", "electra_bench.cli", "report", str(run)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2 and "not an ablation table" in proc.stderr and "ablation.json" in proc.stderr


def test_ablation_figure_is_readable_and_draws_every_row(tmp_path):
    _, result = _synthetic_run(tmp_path)
    fig = figure_ablation(result)
    assert plots.text_overlaps(fig) == []
    paper, ours = fig.axes[:2]
    assert [t.get_text() for t in paper.get_yticklabels()] == [r["model"] for r in result["rows"][:-1]]
    # ours: one point per objective at its score, BERT's and the untrained encoder's reference lines
    lines = ours.get_lines()
    xs = sorted(round(float(line.get_xdata()[0]), 3) for line in lines if line.get_marker() == "o")
    assert xs == sorted(round(r["score"], 3) for r in result["rows"][:-1])
    refs = sorted(round(float(line.get_xdata()[0]), 3) for line in lines if line.get_marker() in (None, "None", ""))
    assert refs == [51.0, 59.0]  # untrained, BERT


def test_ablation_figure_draws_a_score_outside_its_band(tmp_path):
    """With one pre-training seed the score (aggregate of medians) can lie outside the band (range of
    each evaluation seed's aggregate), as in a real default run: the figure still draws it."""
    _, result = _synthetic_run(tmp_path)
    result["rows"][0]["min"] = result["rows"][0]["score"] + 0.3
    assert plots.text_overlaps(figure_ablation(result)) == []
