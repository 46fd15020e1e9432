"""`electra-bench sweep`: the generator-size sweep (ELECTRA Figure 3) on compare's machinery; the
end-to-end test is slow."""

import json
import subprocess
import sys

import pandas as pd
import pytest

from electra_bench import presets
from electra_bench.data.task_sources import load_tasks
from electra_bench.errors import BenchError
from electra_bench.experiments import sweep
from electra_bench.experiments.sweep import PAPER_SIZES, parse_sizes, resolve_spec, run_sweep, sweep_rows
from electra_bench.flops import step_flops
from electra_bench.store.layout import RunLayout
from electra_bench.present import plots
from electra_bench.present import sweep_table as sweep_report
from electra_bench.present.sweep_table import load_sweep, render_sweep

MICRO = (("batch_size", 8), ("seq_len", 32), ("vocab_size", 300))  # test_experiments_ablate's
COMMON = dict(preset=None, budget=None, quick=True, convention="measured", corpus=None, source=None, tasks=None,
              seeds=None, protocol=None, device="cpu")


def test_sizes_default_to_the_papers_and_are_checked():
    assert parse_sizes(None) == parse_sizes("") == PAPER_SIZES == (0.125, 0.25, 0.5, 0.75, 1.0)
    assert parse_sizes(" 0.5, 1 ,64") == (0.5, 1.0, 64.0)
    for text, message in (("0.5,abc", "'abc' is not a number"), ("0.5,,1", "empty entry"),
                          ("0,0.5", "must be positive"), ("-0.25", "must be positive"), ("nan", "must be positive"),
                          ("0.5,0.50", "0.5 named twice"), ("1.5", "whole number")):
        with pytest.raises(BenchError, match=message) as e:
            parse_sizes(text)
        assert str(e.value).startswith("--generator-sizes") and "\n" not in str(e.value)


def test_resolve_builds_one_rtd_point_per_size_and_a_bert_point():
    spec = resolve_spec(generator_sizes="0.25,1.0", **COMMON)
    assert spec.generator_sizes == (0.25, 1.0) and spec.base.pretrain_seeds == 1
    points = spec.points()
    assert [n for n, _, _ in points] == ["gen-0.25", "gen-1", "bert"]
    for name, g, ps in points[:2]:
        assert ps.objectives == ("rtd",) and dict(ps.overrides)["generator_size"] == g
        assert ps.resolved_preset().model.generator.hidden_size == int(128 * g)
    assert points[2][2].objectives == ("mlm",) and "generator_size" not in dict(points[2][2].overrides)
    # the id follows the config: the same command resumes, other sizes are another run
    assert spec.run_id() == resolve_spec(generator_sizes="0.25,1", **COMMON).run_id()
    assert spec.run_id().startswith("sweep-tiny-quick-")
    assert resolve_spec(generator_sizes="0.25", **COMMON).run_id() != spec.run_id()
    assert resolve_spec(**COMMON).generator_sizes == PAPER_SIZES


def test_resolve_refuses_what_a_sweep_cannot_vary():
    with pytest.raises(BenchError, match="--generator-size sets one generator.*--generator-sizes"):
        resolve_spec(overrides=presets.Overrides(generator_size=0.5), **COMMON)
    with pytest.raises(BenchError, match="--uniform-generator"):
        resolve_spec(overrides=presets.Overrides(uniform_generator=True), **COMMON)
    with pytest.raises(BenchError, match="--tied-generator"):
        resolve_spec(overrides=presets.Overrides(untied_generator=False), **COMMON)
    # 0.25 of tiny's 128 hidden units is 32: the same generator named twice
    with pytest.raises(BenchError, match=r"--generator-sizes: 0.25 and 32 are the same generator \(hidden 32"):
        resolve_spec(generator_sizes="0.25,32", **COMMON)


@pytest.mark.parametrize("args, message", [
    (["--generator-sizes", "0.5,0.5"], "--generator-sizes: 0.5 named twice"),
    (["--generator-sizes", "0.5,x"], "--generator-sizes: 'x' is not a number"),
    (["--generator-size", "0.5"], "--generator-size sets one generator"),
])
def test_cli_bad_sizes_are_one_line_and_create_nothing(tmp_path, args, message):
    proc = subprocess.run([sys.executable, "-m", "electra_bench", "sweep", "--quick", "--results",
                           str(tmp_path / "results"), *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and message in proc.stderr
    assert not (tmp_path / "results").exists()


# -- rows, rendering and the plot from stored scores ---------------------------------------------------

def _scores(objective, value_at, fractions, budget, pretrain_seeds=(0,), seeds=(0, 1)):
    rows = []
    for f in fractions:
        for s in pretrain_seeds:
            for e in seeds:
                rows.append({"objective": objective, "fraction": f, "step": int(100 * f), "train_flops": f * budget,
                             "convention": "measured", "task": "rt-polarity", "seed": e, "metric": "accuracy",
                             "value": value_at(f) + e + 0.5 * s, "protocol": "probe", "pretrain_seed": s})
    return pd.DataFrame(rows)


def _result(sizes=(0.125, 0.25, 0.5, 0.75, 1.0), budget=1.2e13):
    p = presets.get("tiny")
    tasks = {t.spec.name: t.spec for t in load_tasks(None, ["rt-polarity"])}
    points = []
    for i, g in enumerate(sizes):
        pp = presets.resolve("tiny", presets.Overrides(generator_size=g))
        points.append({"name": sweep.point_name(g), "generator_size": g, "objective": "rtd", "preset": pp,
                       "scores": _scores("rtd", lambda f, i=i: 60 + 5 * f - i, (0.25, 0.5, 1.0), budget)})
    bert = pd.concat([_scores("mlm", lambda f: 58 + 4 * f, (0.25, 0.5, 1.0), budget),
                      _scores("init", lambda f: 50.0, (0.0,), 0.0)])
    bert.loc[bert["objective"] == "init", ["step", "train_flops"]] = 0
    points.append({"name": "bert", "generator_size": None, "objective": "mlm", "preset": p, "scores": bert})
    rows = sweep_rows(points, tasks)
    return {"run_id": "sweep-tiny-x", "preset": "tiny", "discriminator_hidden": 128, "budget_flops": budget,
            "flop_convention": "measured", "protocol": "probe", "tasks": list(tasks), "aggregate": "suite mean",
            "generator_sizes": list(sizes), "rows": rows}


def test_rows_per_size_then_bert_and_untrained():
    result = _result()
    rows = result["rows"]
    assert [r["model"] for r in rows] == [f"ELECTRA, generator {g:g}" for g in PAPER_SIZES] + ["BERT", "untrained"]
    gens = rows[:5]
    assert [r["generator_hidden"] for r in gens] == [16, 32, 64, 96, 128]
    assert [r["generator_fraction"] for r in gens] == [0.125, 0.25, 0.5, 0.75, 1.0]
    # a bigger generator costs more per step, in both conventions
    for conv in ("paper", "measured"):
        per_step = [r["flops_per_step"][conv] for r in gens]
        assert per_step == sorted(per_step) and len(set(per_step)) == 5
        tiny = presets.resolve("tiny", presets.Overrides(generator_size=0.5))
        assert gens[2]["flops_per_step"][conv] == step_flops(tiny, "rtd", conv).flops_per_step
    # final checkpoint: value_at(1.0) - i, mean of eval seeds 0 and 1 (+0.5); band over eval seeds
    assert gens[0]["score"] == pytest.approx(65.5) and (gens[0]["min"], gens[0]["max"]) == (65.0, 66.0)
    assert gens[4]["score"] == pytest.approx(61.5) and gens[4]["vs_bert"] == pytest.approx(-1.0)
    assert [c["fraction"] for c in gens[0]["curve"]] == [0.25, 0.5, 1.0]
    bert, init = rows[5], rows[6]
    assert bert["vs_bert"] == 0 and bert["generator_hidden"] is None and bert["flops_per_step"]["paper"] > 0
    assert init["score"] == pytest.approx(50.5) and init["train_flops"] == 0 and init["curve"] == []


def test_render_md_csv_latex_and_table():
    result = _result(sizes=(0.25, 1.0))
    md = render_sweep(result, "md")
    assert "| Model | generator | hidden | steps | FLOPs/step | train FLOPs | score | band | vs BERT |" in md
    assert "(measured)" in md.splitlines()[0]
    assert "| ELECTRA, generator 0.25 | 0.25 | 32 | 100 |" in md and "| BERT | - | - | 100 |" in md
    assert md.count("\n|") == 6  # header, rule, 2 sizes, BERT, untrained
    lines = render_sweep(result, "csv").splitlines()
    assert lines[0].startswith("point,model,objective,generator_size,generator_fraction,generator_hidden")
    assert len(lines) == 5 and lines[1].startswith("gen-0.25,\"ELECTRA, generator 0.25\",rtd,0.25,0.25,32,128,100,")
    header = lines[0].split(",")
    first = next(__import__("csv").reader([lines[1]]))
    assert float(first[header.index("flops_per_step_paper")]) == result["rows"][0]["flops_per_step"]["paper"]
    latex = render_sweep(result, "latex")
    assert r"\begin{tabular}{lrrrrrrrr}" in latex and "ELECTRA, generator 0.25 & 0.25 & 32" in latex
    text = render_sweep(result, "table", width=120)
    assert "Generator size (ELECTRA Figure 3)" in text and "untrained" in text
    # one line per row at 120 columns (report.txt's width): labels are not wrapped
    assert "│ ELECTRA, generator 0.25 │" in text and "│ BERT " in text
    assert max(len(line) for line in text.splitlines()) <= 120
    with pytest.raises(BenchError, match="unknown format 'xml'"):
        render_sweep(result, "xml")


def test_plot_is_readable_and_written(tmp_path):
    result = _result()
    fig = sweep_report.figure_sweep(result)
    assert plots.text_overlaps(fig) == []
    paths = sweep_report.plot_sweep(result, tmp_path / "plots")
    assert sorted(p.name for p in paths) == ["generator_size.png", "generator_size.svg"]
    assert paths[0].read_bytes().startswith(b"\x89PNG")
    svg = (tmp_path / "plots" / "generator_size.svg").read_text()
    assert "BERT (MLM)" in svg and "same budget" in svg
    # two sizes, and one made from a single pre-training seed without a band, also read cleanly
    assert plots.text_overlaps(sweep_report.figure_sweep(_result(sizes=(0.25, 1.0)))) == []


def test_load_sweep_is_one_line_on_a_missing_or_corrupt_file(tmp_path):
    with pytest.raises(BenchError, match="not a finished generator-size sweep") as e:
        load_sweep(tmp_path)
    assert "\n" not in str(e.value)
    (tmp_path / "sweep.json").write_text("{not json")
    with pytest.raises(BenchError, match=r"sweep.json:1: sweep.json is not valid JSON"):
        load_sweep(tmp_path)
    (tmp_path / "sweep.json").write_text("{}")
    with pytest.raises(BenchError, match="lacks rows"):
        load_sweep(tmp_path)
    result = _result(sizes=(0.5,))
    (tmp_path / "sweep.json").write_text(json.dumps(result))
    assert load_sweep(tmp_path)["rows"][0]["generator_hidden"] == 64


# -- end to end ----------------------------------------------------------------------------------------


def _log_rows(layout, point, objective):
    return len(layout.points.joinpath(point, "pretrain", objective, "seed-0", "log.jsonl").read_text().splitlines())


@pytest.mark.slow
def test_sweep_end_to_end_at_a_tiny_budget(tmp_path, word_corpus):
    sizes = (0.25, 1.0)
    overrides = presets.Overrides(**dict(MICRO))
    biggest = presets.resolve("tiny", presets.Overrides(**dict(MICRO), generator_size=1.0))
    budget = 4 * step_flops(biggest, "rtd").flops_per_step
    spec = resolve_spec(generator_sizes=",".join(map(str, sizes)), preset="tiny", budget=f"{budget:.6g}",
                        quick=False, convention="measured", corpus=str(word_corpus), source=None,
                        tasks=["rt-polarity"], seeds=1, protocol="probe", device="cpu", jobs=1, threads=1,
                        overrides=overrides)
    spec = sweep.SweepSpec(sweep.dataclasses.replace(spec.base, probe_pool=120, probe_examples=80,
                                                     max_eval_examples=80), spec.generator_sizes)
    result, rendered = run_sweep(spec, tmp_path / "results", None, quiet=True)
    print(rendered)
    layout = RunLayout(tmp_path / "results" / spec.run_id())
    for f in (layout.config, layout.provenance, layout.history, layout.sweep, layout.report_txt, layout.report_md,
              layout.plots / "generator_size.png", layout.plots / "generator_size.svg"):
        assert f.is_file(), f
    assert load_sweep(layout.root) == json.loads(json.dumps(result))
    assert plots.text_overlaps(sweep_report.figure_sweep(result)) == []
    rows = {r["point"] + "/" + r["objective"]: r for r in result["rows"]}
    assert list(rows) == ["gen-0.25/rtd", "gen-1/rtd", "bert/mlm", "bert/init"]
    small, big = rows["gen-0.25/rtd"], rows["gen-1/rtd"]
    assert (small["generator_hidden"], big["generator_hidden"]) == (32, 128)
    for conv in ("paper", "measured"):
        assert small["flops_per_step"][conv] < big["flops_per_step"][conv]
    # the same budget: the bigger generator takes fewer steps (4 at the budget of 4 of its steps)
    assert big["steps"] >= 4 and small["steps"] > big["steps"]
    for r in (small, big, rows["bert/mlm"]):
        assert r["score"] is not None and 0 < r["train_flops"] <= budget and len(r["curve"]) == 3
    assert rows["bert/init"]["score"] is not None and rows["bert/mlm"]["vs_bert"] == 0
    # every point is a compare-layout run with its own provenance; the untrained encoder is scored once
    for point, objective in (("gen-0.25", "rtd"), ("gen-1", "rtd"), ("bert", "mlm")):
        sub = RunLayout(layout.points / point)
        assert sub.provenance.is_file() and sub.history.is_file()
        assert (sub.pretrain(objective, 0).checkpoint(1.0) / "model.safetensors").is_file()
        objectives = {json.loads(line)["objective"] for line in sub.scores.read_text().splitlines()}
        assert objectives == ({objective, "init"} if point == "bert" else {objective})
    assert "ELECTRA, generator 0.25" in rendered and "BERT" in rendered
    assert layout.report_md.read_text().count("\n|") == 6
    # a rerun resumes: no new pre-training, no new scores, the same table
    logs = {p: _log_rows(layout, p, o) for p, o in (("gen-0.25", "rtd"), ("gen-1", "rtd"), ("bert", "mlm"))}
    n_scores = {p: len((layout.points / p / "scores.jsonl").read_text().splitlines()) for p in logs}
    again, _ = run_sweep(spec, tmp_path / "results", None, quiet=True)
    assert again["rows"] == result["rows"] and again["invocations"] == 2
    assert {p: _log_rows(layout, p, o) for p, o in (("gen-0.25", "rtd"), ("gen-1", "rtd"), ("bert", "mlm"))} == logs
    assert {p: len((layout.points / p / "scores.jsonl").read_text().splitlines()) for p in logs} == n_scores
    assert json.loads(layout.history.read_text().splitlines()[-1])["new_scores"] == 0


def test_report_renders_a_finished_sweep_and_takes_one_kind_at_a_time(tmp_path):
    run = tmp_path / "sweep-tiny-x"
    run.mkdir()
    (run / "config.json").write_text("{}")
    (run / "sweep.json").write_text(json.dumps(_result(sizes=(0.25, 1.0))))

    def report(*args):
        return subprocess.run([sys.executable, "-m", "electra_bench.cli", "report", *args], capture_output=True,
                              text=True, timeout=120)

    proc = report(str(run), "--format", "md")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("**Generator size (ELECTRA Figure 3)")
    assert "| ELECTRA, generator 0.25 |" in proc.stdout and "| BERT |" in proc.stdout
    other = tmp_path / "compare-x"
    other.mkdir()
    (other / "config.json").write_text("{}")
    proc = report(str(run), str(other))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert "generator-size sweep" in proc.stderr and "one kind at a time" in proc.stderr
    # a sweep stopped before its sweep.json is no compare run either: one line
    (run / "sweep.json").unlink()
    (run / "points").mkdir()
    proc = report(str(run))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "generator-size sweep" in proc.stderr


def test_a_budget_below_one_step_of_the_biggest_generator_names_it_and_creates_nothing(tmp_path, word_corpus):
    proc = subprocess.run([sys.executable, "-m", "electra_bench", "sweep", "--quick", "--budget", "1e9",
                           "--generator-sizes", "0.25,1", "--batch-size", "8", "--seq-len", "32", "--vocab-size", "300",
                           "--corpus", str(word_corpus), "--tasks", "rt-polarity",
                           "--results", str(tmp_path / "results")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert "generator size 1: budget 1e+09 FLOPs is smaller than one training step of rtd" in proc.stderr
    assert not (tmp_path / "results").exists()
