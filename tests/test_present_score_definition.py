"""Issue 40, item 6: one definition of the score, used by the table, the text, the score plot's axis and
the tasks plot alike (and the tasks plot shades a CI as the score plot does); and a report that cannot say
"MLM learned" and "pre-training did not improve on it" in one breath."""

import numpy as np
import pytest

from electra_bench.present import plots, report
from electra_bench.score.metrics import compute
from electra_bench.store import predictions
from electra_bench.store import runs as results
from electra_bench.summarise import summary
from electra_bench.present.summary_text import headline_lines, learning_lines

TASKS = {"sst2": "accuracy", "cola": "mcc"}
EVAL_SEEDS = 3  # with 3, a median and a mean differ: the definitions could not hide behind each other


def make_run(tmp_path, skills, seeds=(0, 1), n=300):
    """Encoders whose predictions are right with the given skill (varying by pre-training and evaluation
    seed), rows computed from stored predictions as compare stores them."""
    rng = np.random.default_rng(0)
    run = results.open_run(tmp_path, "r", {"preset": "tiny"})
    labels = {t: rng.integers(0, 2, n) for t in TASKS}
    for (obj, frac), skill in skills.items():
        for s in seeds:
            result = {"rows": [], "predictions": []}
            for task, metric in TASKS.items():
                y = labels[task]
                preds = np.stack([np.where(rng.random(n) < skill + 0.02 * s + 0.03 * e ** 2, y, 1 - y)
                                  for e in range(EVAL_SEEDS)])
                records = {e: {"dev": (preds[e], y, np.arange(n), "sha-" + task)} for e in range(EVAL_SEEDS)}
                result["predictions"].append((obj, s, frac, predictions.collect(task, records, "probe")))
                for e in range(EVAL_SEEDS):
                    result["rows"].append(dict(objective=obj, fraction=frac, step=int(frac * 100),
                                               train_flops=frac * 1e13, convention="measured", task=task, seed=e,
                                               metric=metric, value=compute([metric], preds[e], y)[metric],
                                               protocol="probe", pretrain_seed=s))
            run.store_scored(result)
    return run


def test_one_score_in_the_table_the_statistics_the_text_and_both_plots(tmp_path):
    run = make_run(tmp_path, {("init", 0.0): 0.5, ("mlm", 0.5): 0.6, ("mlm", 1.0): 0.7, ("rtd", 0.5): 0.62,
                              ("rtd", 1.0): 0.75})
    s = summary.build_summary(run)
    block = s["protocols"]["probe"]
    rows = run.scores()
    stats = {q["arm"]: q for q in block["statistics"]["points"]}
    for p in block["points"]:
        sel = rows[(rows.objective == p["objective"]) & ((rows.fraction - p["fraction"]).abs() < 1e-9)]
        per_task = sel.groupby(["task", "pretrain_seed"])["value"].mean().groupby(level=0).mean()
        assert p["score"]["value"] == pytest.approx(per_task.mean())  # the suite mean of per-task means
        assert p["score"]["value"] == pytest.approx(stats[f"{p['objective']}@{p['fraction']:.4f}"]["estimate"])
        for t in TASKS:
            assert p["tasks"][t]["mean"] == pytest.approx(per_task[t])
    medians = rows[(rows.objective == "rtd") & (rows.fraction == 1.0)].groupby("task")["value"].median()
    assert abs(medians.mean() - next(p for p in block["points"] if p["objective"] == "rtd"
                                     and p["fraction"] == 1.0)["score"]["value"]) > 0.05  # not the median
    md = report.render([s], "md")
    final = next(line for line in md.splitlines() if line.startswith("| RTD tiny") and "| 100% |" in line)
    rtd = next(p for p in block["points"] if p["objective"] == "rtd" and p["fraction"] == 1.0)
    assert f"| {rtd['score']['value']:.1f} ±" in final and f"| {rtd['tasks']['sst2']['mean']:.1f} |" in final
    phrase = "mean over 3 evaluation seeds, then over 2 pre-training seeds"
    assert phrase in md
    # the CI note names the interval the statistics make, not the quadrature rule it replaced
    note = next(line for line in md.splitlines() if "95% CI: multi-bootstrap" in line)
    assert "the wider of the paired t over seeds and the Welch t" in note and "quadrature" not in note, note
    assert phrase in plots.figure_scores(s).axes[0].get_ylabel().replace("\n", " ")
    fig = plots.figure_tasks(s)
    legend_titles = [lg.get_title().get_text() for ax in fig.axes if (lg := ax.get_legend())] + \
                    [lg.get_title().get_text() for lg in fig.legends]
    assert any(phrase in t.replace("\n", " ") and "95% CI" in t for t in legend_titles)
    # each task panel's line is the task mean, its shading the task's 95% CI from the statistics
    for ax, task in zip(fig.axes, block["tasks"]):
        rtd_line = next(line for line in ax.get_lines() if line.get_color() == plots.COLORS["rtd"])
        assert list(rtd_line.get_ydata()) == pytest.approx(
            [p["tasks"][task]["mean"] for p in block["points"] if p["objective"] == "rtd"])
        ci = [stats[f"rtd@{f:.4f}"]["per_task"][task]["ci"] for f in (0.5, 1.0)]
        band = next(c for c in ax.collections if tuple(c.get_facecolor()[0][:3]) ==
                    pytest.approx(tuple(int(plots.COLORS["rtd"][i:i + 2], 16) / 255 for i in (1, 3, 5))))
        ys = band.get_paths()[0].vertices[:, 1]
        assert min(ys) == pytest.approx(min(lo for lo, _ in ci)) and max(ys) == pytest.approx(max(hi for _, hi in ci))


def test_held_out_learning_and_the_downstream_score_are_told_apart(tmp_path):
    """MLM learned its own task (held-out diagnostics) while its checkpoints do not beat the untrained
    encoder downstream: both can be true, and the report says which is which."""
    run = make_run(tmp_path, {("init", 0.0): 0.7, ("mlm", 1.0): 0.6, ("rtd", 1.0): 0.8})
    s = summary.build_summary(run)
    s["learning"] = {"mlm": {"runs": [{"seed": 0, "learned": True}], "learned": True,
                             "final_mean": {"mlm_gain_nats": 2.5, "token_cosine": 0.3}}}
    lines = learning_lines(s) + headline_lines(s)
    learned = next(line for line in lines if "MLM learned" in line)
    untrained = next(line for line in lines if line.startswith("The untrained encoder already reaches MLM"))
    assert "held-out pre-training diagnostics" in learned
    assert "on the downstream tasks" in untrained and "did not improve on it" not in untrained


def test_an_objective_that_beats_the_untrained_encoder_is_said_to():
    """The 4-seed default design on ebs-2 (results/default-ebs2-4seeds): MLM's CI against the untrained
    encoder lies above 0 and RTD's does not; the report states both, not only the failure."""
    import json
    from pathlib import Path
    run = Path(__file__).resolve().parents[1] / "results" / "default-ebs2-4seeds"
    lines = headline_lines(json.loads((run / "summary.json").read_text(encoding="utf-8")))
    assert "MLM beats the untrained encoder (95% CI of MLM - untrained: [+0.5, +2.0], estimate +1.2)" in lines
    assert any(line.startswith("RTD does not beat the untrained encoder") for line in lines)
    assert not any(line.startswith("MLM does not beat") for line in lines)
