"""Report formats: Markdown header, CSV via pandas, LaTeX booktabs, the rich table."""

import io

import pandas as pd
import pytest

from electra_bench.errors import BenchError
from electra_bench.present import report
from electra_bench.store import runs as results

STANDARD = {
    "init": [(0, 0, 50)],
    "mlm": [(0.5, 5e13, 65), (1.0, 1e14, 70)],
    "rtd": [(0.5, 5e13, 72), (1.0, 1e14, 75)],
}


def make_run(tmp_path, run_id="r1", curves=STANDARD):
    rows = []
    for obj, pts in curves.items():
        for frac, flops, base in pts:
            for seed in (0, 1, 2):
                for task, off in (("sst2", 5), ("rte", -5)):
                    rows.append(dict(objective=obj, fraction=frac, step=int(frac * 100), train_flops=flops,
                                     convention="measured", task=task, seed=seed, metric="accuracy",
                                     value=base + off + 0.5 * seed, protocol="finetune"))
    run = results.open_run(tmp_path, run_id, {"preset": "tiny", "params": 1_200_000})
    run.append_scores(rows)
    return run


def test_markdown_has_header_and_rows(tmp_path):
    md = report.render([make_run(tmp_path)], "md")
    lines = md.splitlines()
    assert lines[0] == "| Model | Train FLOPs | Params | Trained | Score | 95% CI | RTE | SST-2 |"
    assert set(lines[1].replace("|", "")) == {"-"}
    # the CI is of the mean over evaluation seeds (75.5), resampled over them: this run's seeds are 0.5 apart
    row = next(line for line in lines if line.startswith("| RTD tiny | 1.0e14 | 1.2M | 100% | 75.5 ± 0.5 (n=3) | ["))
    lo, hi = (float(x) for x in row.split("| [")[1].split("]")[0].split(", "))
    assert lo < 75.5 < hi and row.endswith("] | 70.5 | 80.5 |")
    assert "RTD - MLM = " in md and "95% CI" in md
    assert "| untrained | 0 |" in md
    assert "RTD reaches MLM's final score" in md


def test_csv_parses_with_pandas(tmp_path):
    text = report.render([make_run(tmp_path)], "csv")
    df = pd.read_csv(io.StringIO(text))
    assert len(df) == 5
    assert {"model", "train_flops", "params", "fraction", "score", "score_min", "score_max", "n_seeds",
            "sst2", "rte"} <= set(df.columns)
    final = df[(df.objective == "rtd") & (df.fraction == 1.0)].iloc[0]
    assert final.score == pytest.approx(75.5)
    assert final.train_flops == pytest.approx(1e14)


def test_latex_is_a_booktabs_tabular(tmp_path):
    tex = report.render([make_run(tmp_path)], "latex")
    assert r"\begin{tabular}" in tex and r"\end{tabular}" in tex
    assert tex.index(r"\toprule") < tex.index(r"\midrule") < tex.index(r"\bottomrule")
    body = [l for l in tex.splitlines() if l.endswith(r"\\")]
    assert len(body) == 1 + 5  # header + points
    ncols = body[0].count("&") + 1
    assert all(l.count("&") + 1 == ncols for l in body)
    assert r"$\pm$" in tex and r"100\%" in tex
    # notes are comments, so the output drops into a document as is
    assert all(l.startswith("%") for l in tex.split(r"\end{tabular}")[1].strip().splitlines())


def test_terminal_table(tmp_path):
    text = report.render([make_run(tmp_path)], "table")
    assert "Model" in text and "RTD tiny" in text and "untrained" in text
    table, notes = report.rich_table([make_run(tmp_path, "r2")])
    assert table.row_count == 5 and notes


def test_several_runs_get_a_run_column(tmp_path):
    runs = [make_run(tmp_path, "a"), make_run(tmp_path, "b")]
    md = report.render(runs, "md")
    assert md.splitlines()[0].startswith("| Run | Model |")
    assert "[a]" in md and "[b]" in md
    df = pd.read_csv(io.StringIO(report.render(runs, "csv")))
    assert sorted(df.run_id.unique()) == ["a", "b"]


def test_report_reads_summary_dicts_and_loaded_runs(tmp_path):
    run = make_run(tmp_path)
    loaded = results.load_run(run.path)
    assert "RTD tiny" in report.render([loaded], "md")


def test_unknown_format(tmp_path):
    with pytest.raises(BenchError, match="unknown report format"):
        report.render([make_run(tmp_path)], "html")


@pytest.mark.parametrize("width", [80, 100])
def test_terminal_table_fits_narrow_terminals(tmp_path, width):
    run = make_run(tmp_path)
    text = report.render([run], "table", width=width)
    assert max(len(line) for line in text.splitlines()) <= width
    # the compact layout keeps every point's score and each task's value at the last checkpoints
    wide = report.render([run], "table", width=400)
    assert max(len(line) for line in wide.splitlines()) > width  # the full table would not have fit
    df = report.dataframe([run])
    for v in df["score"].dropna():
        assert f"{v:.1f}" in text
    tasks = list(df.columns[list(df.columns).index("score_ci_high") + 1:])
    assert tasks and all(report.TASK_NAMES.get(t, t) in text for t in tasks)
    assert "Seeds per score" in text


def test_wide_terminal_gets_the_full_table(tmp_path):
    text = report.render([make_run(tmp_path)], "table", width=400)
    assert "per task" not in text and "Params" in text
