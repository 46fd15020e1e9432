"""A run's statistics from its stored per-example predictions (store/predictions.py, confidence.py):
the Multi-Bootstrap when predictions reproduce the score rows, the seeds-only fallback (said) when they do
not or are missing, the prediction store's round trip, and the verdict, crossover and plan they feed."""

import numpy as np
import pytest

from electra_bench.errors import BenchError
from electra_bench.score.metrics import compute
from electra_bench.store import runs as results
from electra_bench.summarise import summary
from electra_bench.present.summary_text import headline_lines
from electra_bench.summarise.invariants import invariant_violations
from electra_bench.store.predictions import PredictionStore, TaskPredictions

TASKS = {"sst2": "accuracy", "cola": "mcc"}


def make_run(tmp_path, *, rtd_skill=0.80, mlm_skill=0.70, seeds=(0, 1, 2, 3), n=400, run_id="r",
             protocol="probe", run=None, rng_seed=0):
    """Three encoders (init, mlm, rtd at fractions 0.5 and 1) whose predictions are right with a skill that
    grows with the fraction and varies by pre-training seed; rows are computed from the stored predictions,
    as compare stores them (RunDir.store_scored). `run`: score the same encoders into it under `protocol`."""
    rng = np.random.default_rng(0)
    run = run or results.open_run(tmp_path, run_id, {"preset": "tiny"})
    labels = {t: rng.integers(0, 2, n) for t in TASKS}  # one dev set per task, whatever the reading
    if rng_seed:
        rng = np.random.default_rng(rng_seed)
    arms = [("init", 0.0, 0.5), ("mlm", 0.5, mlm_skill - 0.05), ("mlm", 1.0, mlm_skill),
            ("rtd", 0.5, rtd_skill - 0.05), ("rtd", 1.0, rtd_skill)]
    for obj, frac, skill in arms:
        for s in seeds:
            result = {"rows": [], "predictions": []}
            for task, metric in TASKS.items():
                y = labels[task]
                seed_skill = skill + 0.01 * (s - 1.5)
                preds = np.stack([np.where(rng.random(n) < seed_skill, y, 1 - y) for _ in range(2)])
                records = {e: {"dev": (preds[e], y, np.arange(n), "sha-" + task)} for e in range(2)}
                from electra_bench.store import predictions

                result["predictions"].append((obj, s, frac, predictions.collect(task, records, protocol)))
                for e in range(2):
                    result["rows"].append(dict(objective=obj, fraction=frac, step=int(frac * 100),
                                               train_flops=frac * 1e13, convention="measured", task=task, seed=e,
                                               metric=metric, value=compute([metric], preds[e], y)[metric],
                                               protocol=protocol, pretrain_seed=s))
            run.store_scored(result)
    return run


def test_predictions_reproduce_rows_and_feed_the_multibootstrap(tmp_path):
    run = make_run(tmp_path)
    s = summary.build_summary(run)
    st = s["protocols"]["probe"]["statistics"]
    assert st["method"] == "multi-bootstrap" and st["note"] is None and st["paired"]
    assert st["examples"] == {"cola": 400, "sst2": 400}
    final = next(d for d in st["differences"] if d["fraction"] == 1.0)
    assert final["resolved"] and final["ci"][0] > 0 and final["p_value"] < 0.025
    assert set(final["per_task"]) == set(TASKS) and final["leave_one_out"] == {}  # two tasks: none left out
    assert 0.5 < final["prob_improvement"] <= 1.0
    v = s["verdict"]
    assert v["kind"] == "ranked" and v["better"] == "rtd" and v["difference"] == final["estimate"]
    assert s["crossover"]["rtd_over_mlm"]["status"] == "crossed"
    assert invariant_violations(s) == []
    # the suite-level probability beside the difference, rliable's per-task average only under its own name
    verdict = next(line for line in headline_lines(s) if line.startswith("Verdict:"))
    assert f"P(RTD > MLM) = {final['prob_improvement']:.2f} over pairs of pre-training seeds (rliable's " \
           f"per-task average: {final['rliable_prob_improvement']:.2f})" in verdict, verdict
    assert verdict.count("P(RTD > MLM)") == 1, verdict
    # the estimate is the mean over evaluation seeds, then pre-training seeds, of the suite mean
    rows = run.scores()
    want = rows[(rows.objective == "rtd") & (rows.fraction == 1.0)].groupby("task")["value"].mean().mean()
    assert final["estimate"] + next(p["estimate"] for p in st["points"] if p["arm"] == "mlm@1.0000") == \
        pytest.approx(want)


def test_a_close_call_is_not_resolved_and_gets_a_plan(tmp_path):
    s = summary.build_summary(make_run(tmp_path, rtd_skill=0.71, seeds=(0, 1)))
    v = s["verdict"]
    assert v["kind"] == "not_resolved" and v["verdict"] == "not resolved with 2 pre-training seeds"
    assert v["plan"]["detectable_difference"] > abs(v["difference"])
    lines = headline_lines(s)
    assert any(line.startswith("Plan: this design (2 pre-training seeds) detects differences of") for line in lines)


def test_predictions_that_do_not_reproduce_the_rows_fall_back_to_seeds_and_say_so(tmp_path):
    run = make_run(tmp_path)
    df = run.scores()
    df.loc[(df.objective == "rtd") & (df.task == "sst2") & (df.seed == 0), "value"] += 1.0
    run.layout.scores.unlink()
    run.append_scores(df.to_dict("records"))
    st = summary.build_summary(run)["protocols"]["probe"]["statistics"]
    assert st["method"] == "seeds-only" and "stored predictions not used" in st["note"]
    assert "recomputed" in st["note"]


def test_without_predictions_statistics_are_over_seeds_only(tmp_path):
    run = make_run(tmp_path)
    import shutil

    shutil.rmtree(run.path / "predictions")
    s = summary.build_summary(run)
    st = s["protocols"]["probe"]["statistics"]
    assert st["method"] == "seeds-only" and "too narrow" in st["note"]
    assert any(line.startswith("Statistics: seeds-only") for line in headline_lines(s))


def test_each_reading_keeps_its_own_predictions_and_its_multibootstrap(tmp_path):
    """Scored under two protocols, the same encoders on the same tasks store two prediction files each: the
    second reading once overwrote the first's, whose rows then no longer matched, so the first reading fell
    back to seeds-only statistics (the 1.2e14 run scored with probe,zeroshot,finetune-tuned did)."""
    run = make_run(tmp_path)
    make_run(tmp_path, run=run, protocol="finetune", rtd_skill=0.6, mlm_skill=0.75, rng_seed=1)
    s = summary.build_summary(run)
    for protocol in ("probe", "finetune"):
        st = s["protocols"][protocol]["statistics"]
        assert st["method"] == "multi-bootstrap" and st["note"] is None, (protocol, st["note"])
    assert (run.path / "predictions" / "mlm" / "seed-0" / "frac-1.0000" / "sst2@finetune.npz").is_file()
    ranked = {p: next(d for d in s["protocols"][p]["statistics"]["differences"] if d["fraction"] == 1.0)
              for p in ("probe", "finetune")}
    assert ranked["probe"]["estimate"] > 0 > ranked["finetune"]["estimate"]


def test_an_unkeyed_prediction_file_of_an_older_run_is_read_and_checked_against_the_rows(tmp_path):
    """Runs stored before the protocol was in the file name have <task>.npz: read for the reading whose rows
    it reproduces; for another reading the row check refuses it and names the file."""
    run = make_run(tmp_path)
    for f in (run.path / "predictions").rglob("*@probe.npz"):
        f.rename(f.with_name(f.name.replace("@probe", "")))
    st = summary.build_summary(run)["protocols"]["probe"]["statistics"]
    assert st["method"] == "multi-bootstrap" and st["note"] is None
    make_run(tmp_path, run=run, protocol="finetune", rng_seed=1)
    for f in (run.path / "predictions").rglob("*@finetune.npz"):  # as the old store left it: the last
        f.replace(f.with_name(f.name.replace("@finetune", "")))  # reading's predictions under the plain name
    s = summary.build_summary(run)
    assert s["protocols"]["finetune"]["statistics"]["method"] == "multi-bootstrap"
    st = s["protocols"]["probe"]["statistics"]
    assert st["method"] == "seeds-only" and "stored predictions not used" in st["note"], st["note"]
    assert "from init/seed-0/frac-0.0000/" in st["note"] and ".npz" in st["note"], st["note"]


def test_unkeyed_files_are_named_by_the_reading_whose_rows_they_reproduce(tmp_path):
    """scripts/key_predictions.py's rule: an unkeyed file gets the one reading whose rows it reproduces; one
    that reproduces no reading's rows (here another seed's predictions) is left as it is."""
    from electra_bench.summarise.bootstrap_inputs import name_unkeyed_predictions

    run = make_run(tmp_path, seeds=(0, 1))
    make_run(tmp_path, run=run, protocol="finetune", seeds=(0, 1), rng_seed=1)
    root = run.path / "predictions"
    keyed = sorted(root.rglob("*@*.npz"))
    for f in keyed:  # as the old store named them; the finetune reading's set aside
        f.rename(f.with_name(f.name.split("@")[0] + (".npz" if "@probe" in f.name else ".ft")))
    wrong, other = root / "mlm/seed-1/frac-1.0000/sst2.npz", root / "mlm/seed-0/frac-1.0000/sst2.npz"
    wrong.rename(wrong.with_suffix(".keep"))
    wrong.write_bytes(other.read_bytes())
    planned = dict(name_unkeyed_predictions(run, dry_run=True))
    assert planned["rtd/seed-0/frac-0.5000/cola.npz"] == "would be named cola@probe.npz"
    assert not list(root.rglob("*@*.npz"))  # a dry run renames nothing
    done = dict(name_unkeyed_predictions(run))
    assert done["mlm/seed-1/frac-1.0000/sst2.npz"] == "left: reproduces no reading's rows"
    assert done["rtd/seed-0/frac-0.5000/cola.npz"] == "named cola@probe.npz"
    assert sum(w.startswith("named") for w in done.values()) == len(keyed) // 2 - 1
    wrong.with_suffix(".keep").replace(wrong)
    assert dict(name_unkeyed_predictions(run)) == {"mlm/seed-1/frac-1.0000/sst2.npz": "named sst2@probe.npz"}
    for f in root.rglob("*.ft"):  # now the finetune reading's files, unkeyed, beside the probe's keyed ones
        f.rename(f.with_suffix(".npz"))
    run.append_scores([dict(objective="mlm", fraction=1.0, step=100, train_flops=1e13, convention="measured",
                            task="sst2", seed=0, metric="tuned_lr", value=1e-3, protocol="finetune",
                            pretrain_seed=1)])  # a record beside the scores, as finetune-tuned keeps: not checked
    done = dict(name_unkeyed_predictions(run))
    assert set(done.values()) == {"named cola@finetune.npz", "named sst2@finetune.npz"}
    assert sorted(root.rglob("*@*.npz")) == keyed
    s = summary.build_summary(run)
    assert {s["protocols"][p]["statistics"]["method"] for p in ("probe", "finetune")} == {"multi-bootstrap"}
    copy = root / "rtd/seed-0/frac-0.5000/cola.npz"
    copy.write_bytes(copy.with_name("cola@probe.npz").read_bytes())
    assert dict(name_unkeyed_predictions(run)) == {str(copy.relative_to(root)): "left: cola@probe.npz exists"}


def test_a_second_dev_set_under_the_same_task_is_refused(tmp_path):
    store = PredictionStore(tmp_path)
    p = TaskPredictions("sst2", "probe", [0], {"dev": np.zeros((1, 3), np.int16)},
                        {"dev": np.zeros(3, np.int16)}, {"dev": np.arange(3)}, "a" * 64)
    store.write("mlm", 0, 1.0, p)
    assert store.read("mlm", 0, 1.0, "sst2", "probe")["seeds"] == [0]
    assert store.read("mlm", 0, 1.0, "sst2", "finetune") is None
    assert store.read("rtd", 0, 1.0, "sst2", "probe") is None
    p.dev_sha256 = "b" * 64
    with pytest.raises(BenchError, match="dev set of sst2 differs"):
        store.write("rtd", 0, 1.0, p)


def test_one_pretrain_seed_reads_as_one_and_claims_no_probability_over_pairs(tmp_path):
    """With one pre-training seed there is one pair of seeds, which is no probability; the p-value prints
    as 'p < 0.001' (not 'p = < 0.001'), the seed count in the singular, and the plan says why it has none."""
    s = summary.build_summary(make_run(tmp_path, rtd_skill=0.85, seeds=(0,)))
    final = next(d for d in s["protocols"]["probe"]["statistics"]["differences"] if d["fraction"] == 1.0)
    assert final["prob_improvement"] is None and final["rliable_prob_improvement"] is None
    assert all(t["prob_improvement"] is None for t in final["per_task"].values())
    verdict = next(line for line in headline_lines(s) if line.startswith("Verdict:"))
    assert "p < 0.001" in verdict and "p = <" not in verdict and "P(RTD > MLM)" not in verdict, verdict
    assert verdict.endswith("; 1 pre-training seed"), verdict
    plan = next(line for line in headline_lines(s) if line.startswith("Plan:"))
    assert plan == "Plan: one pre-training seed: the seeds' noise is unknown, so no plan"
