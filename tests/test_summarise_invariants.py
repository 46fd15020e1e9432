"""summary.json keeps its invariants (docs/results.md, "Invariants") on many synthetic score sets, on the
edge cases that used to contradict themselves, and on stored real runs; a stored summary that breaks one
is rebuilt by load_or_build."""

import json
import os
import random
import shutil
from pathlib import Path

import pytest

from electra_bench.store.atomic_io import append_jsonl
from electra_bench.store import runs as results
from electra_bench.summarise import summary
from electra_bench.summarise.invariants import invariant_violations

FIXTURE_RUN = Path(__file__).parent / "fixtures" / "runs" / "compare-tiny-quick-dcf2017d"
TASKS = ("sentiment", "pairs", "rating")  # not GLUE ids: the suite mean of their only metric


def make_run(tmp_path, curves, *, seeds=(0, 1), pretrain_seeds=(0,), jitter=0.5, pretrain_jitter=0.0,
             run_id="r", task_offsets=(5.0, -5.0, 0.0), learned=None, arm_noise=None):
    """curves: objective -> [(fraction, flops, base score)]; a task's score is base + its offset + seed * jitter
    + pretrain_seed * pretrain_jitter (+ arm_noise[objective] x (-1)^(seed + 1) x (seed + 1): noise that
    differs between objectives). learned: objective -> [bool per pre-training seed] writes a diagnostics
    log that passes (True) or fails (False) the learning check."""
    rows = []
    for obj, pts in curves.items():
        for frac, flops, base in pts:
            for ps in pretrain_seeds:
                for seed in seeds:
                    for task, off in zip(TASKS, task_offsets):
                        rows.append(dict(objective=obj, fraction=frac, step=int(frac * 1000), train_flops=flops,
                                         convention="measured", task=task, seed=seed, metric="accuracy",
                                         value=base + off + seed * jitter + ps * pretrain_jitter
                                         + (arm_noise or {}).get(obj, 0.0) * (-1) ** (seed + 1) * (seed + 1),
                                         protocol="probe", pretrain_seed=ps))
    run = results.open_run(tmp_path, run_id, {"preset": "tiny"})
    run.append_scores(rows)
    for obj, flags in (learned or {}).items():
        for ps, ok in zip(pretrain_seeds, flags):
            final = ({"mlm_gain_nats": 0.8, "disc_auc": 0.75, "disc_gap_nats": 0.04, "token_cosine": 0.3} if ok
                     else {"mlm_gain_nats": 0.8, "disc_auc": 0.52, "disc_gap_nats": 0.0, "token_cosine": 0.9})
            if obj == "mlm":
                final = {k: v for k, v in final.items() if k in ("mlm_gain_nats", "token_cosine")}
                if not ok:
                    final["mlm_gain_nats"] = 0.01
            log = run.layout.pretrain(obj, ps).log
            append_jsonl(log, {"step": 0, "flops": 0.0, "fraction": 0.0, "diag/mlm_gain_nats": 0.0,
                               "diag/token_cosine": 0.2})
            append_jsonl(log, {"step": 10, "flops": 1e13, "fraction": 1.0, **{f"diag/{k}": v for k, v in final.items()}})
    return run


def assert_invariants(s):
    assert invariant_violations(s) == []
    # and the same after a JSON round trip (what summary.json holds)
    assert invariant_violations(json.loads(json.dumps(s))) == []


def random_case(rng: random.Random):
    n_ckpt = rng.randint(1, 4)
    fractions = sorted(rng.sample([0.125, 0.25, 0.5, 0.75, 1.0], n_ckpt))
    budget = 10 ** rng.uniform(11, 15)
    init_score = rng.uniform(30, 60)
    curves = {}
    if rng.random() < 0.85:
        curves["init"] = [(0, 0, init_score)]
    for obj in ("mlm", "rtd"):
        if rng.random() < 0.07:
            continue  # an objective without scores: incomplete
        score = init_score + rng.uniform(-3, 3)
        pts = []
        for f in fractions:
            score += rng.choice([0.0, rng.uniform(-2, 6)])
            pts.append((f, f * budget * rng.uniform(0.97, 1.03), score))
        curves[obj] = pts
    if not any(o in curves for o in ("mlm", "rtd")):
        curves["mlm"] = [(1.0, budget, init_score)]
    kw = dict(seeds=tuple(range(rng.choice([1, 2, 3]))), pretrain_seeds=tuple(range(rng.choice([1, 1, 2]))),
              jitter=rng.choice([0.0, 0.3, 2.0]), pretrain_jitter=rng.choice([0.0, 0.5, 4.0]),
              task_offsets=tuple(rng.uniform(-10, 10) for _ in TASKS))
    if rng.random() < 0.3:
        kw["learned"] = {o: [rng.random() < 0.7 for _ in kw["pretrain_seeds"]] for o in ("mlm", "rtd") if o in curves}
    return curves, kw


@pytest.mark.parametrize("case", range(60))
def test_invariants_hold_on_random_score_sets(tmp_path, case):
    curves, kw = random_case(random.Random(case))
    s = summary.build_summary(make_run(tmp_path, curves, **kw))
    assert_invariants(s)


def test_every_verdict_kind_is_reached_and_keeps_the_invariants(tmp_path):
    """One case per kind, including the ones that used to contradict themselves."""
    cases = {
        # the reported one: both objectives within noise of init, but MLM far enough below RTD that
        # |RTD - MLM| exceeds the band: not ranked, so not "separated", and no "better"
        "too_small": ({"init": [(0, 0, 50)], "mlm": [(1.0, 1e13, 49.8)], "rtd": [(1.0, 1e13, 50.3)]},
                      dict(seeds=(0, 1, 2), jitter=0.4, arm_noise={"mlm": 3.0, "rtd": 3.0})),
        "ranked": ({"init": [(0, 0, 50)], "mlm": [(1.0, 1e14, 60)], "rtd": [(1.0, 1e14, 70)]}, dict(jitter=0.5)),
        "not_resolved": ({"init": [(0, 0, 50)], "mlm": [(1.0, 1e14, 70)], "rtd": [(1.0, 1e14, 71)]},
                         dict(seeds=(0, 1, 2), jitter=2.0, arm_noise={"rtd": 3.0})),
        "no_noise": ({"init": [(0, 0, 50)], "mlm": [(1.0, 1e14, 60)], "rtd": [(1.0, 1e14, 70)]}, dict(seeds=(0,))),
        "incomplete": ({"init": [(0, 0, 50)], "mlm": [(1.0, 1e14, 50.1)]}, dict(jitter=1.0)),
        "not_learned": ({"init": [(0, 0, 50)], "mlm": [(1.0, 1e14, 60)], "rtd": [(1.0, 1e14, 70)]},
                        dict(learned={"mlm": [True], "rtd": [False]})),
    }
    verdicts = {}
    for kind, (curves, kw) in cases.items():
        s = summary.build_summary(make_run(tmp_path / kind, curves, **kw))
        v = verdicts[kind] = s["verdict"]
        assert v["kind"] == kind, (kind, v)
        assert v["separated"] is (kind == "ranked") and (v["better"] is not None) is (kind == "ranked")
        assert_invariants(s)
    assert verdicts["too_small"]["band"] is not None  # the descriptive range is kept beside the CI


def test_untrained_encoder_reaching_the_target_is_not_zero_percent(tmp_path):
    """The --quick baseline's case: MLM ends below the untrained encoder, so RTD's curve 'reaches' MLM's
    final score at 0 FLOPs; that is no share of MLM's compute, not 0% of it."""
    curves = {"init": [(0, 0, 50)], "mlm": [(0.5, 5e11, 49), (1.0, 1e12, 48)], "rtd": [(1.0, 1e12, 51)]}
    h = summary.build_summary(make_run(tmp_path, curves))["headline"]["rtd_reaches_mlm"]
    assert h["reached"] is True and h["bound"] == "untrained" and h["flops"] == 0
    assert h["percent"] is None and h["fraction_of_reference_compute"] is None
    assert h["text"].startswith("The untrained encoder already reaches MLM's final score")


def test_a_single_objective_below_init_is_incomplete_not_too_small(tmp_path):
    s = summary.build_summary(make_run(tmp_path, {"init": [(0, 0, 50)], "mlm": [(1.0, 1e13, 50.1)]}, jitter=1.0))
    assert s["verdict"]["kind"] == "incomplete" and s["verdict"]["verdict"].startswith("only MLM has scores")


def test_the_checker_finds_the_old_contradictions():
    s = summary.build_summary(results.load_run(FIXTURE_RUN))
    assert invariant_violations(s) == []
    old = json.loads(json.dumps(s))
    v = old["verdict"]
    v.update(separated=True, better="mlm")  # next to kind "too_small", as an older version wrote it
    old["protocols"][old["main_protocol"]]["verdict"] = v
    h = old["headline"]["rtd_reaches_mlm"]
    h.update(bound="exact", percent=0.0, fraction_of_reference_compute=0.0)
    old["protocols"][old["main_protocol"]]["headline"]["rtd_reaches_mlm"] = h
    found = "\n".join(invariant_violations(old))
    assert "separated=True with kind 'too_small'" in found
    assert "better='mlm' with kind 'too_small'" in found
    assert "reached with FLOPs <= 0" in found
    assert invariant_violations({"protocols": {}})[0].startswith("malformed summary")


def test_load_or_build_rebuilds_a_summary_that_contradicts_itself(tmp_path):
    run_dir = tmp_path / FIXTURE_RUN.name
    shutil.copytree(FIXTURE_RUN, run_dir)
    run = results.load_run(run_dir)
    good = summary.build_summary(run)
    bad = json.loads(json.dumps(good))
    bad["verdict"]["separated"] = True
    bad["protocols"][bad["main_protocol"]]["verdict"]["separated"] = True
    (run_dir / "summary.json").write_text(json.dumps(bad))
    rebuilt = summary.load_or_build(results.load_run(run_dir))
    assert rebuilt["verdict"]["separated"] is False and invariant_violations(rebuilt) == []
    (run_dir / "summary.json").write_text(json.dumps(good))
    assert summary.load_or_build(results.load_run(run_dir))["created_utc"] == good["created_utc"]  # kept


def test_learning_record_is_kept_when_the_logs_are_gone(tmp_path):
    """A committed run folder (results/long-cpu) has summary.json and scores.jsonl but no pre-training logs."""
    run_dir = tmp_path / FIXTURE_RUN.name
    shutil.copytree(FIXTURE_RUN, run_dir)
    full = summary.build_summary(results.load_run(run_dir))
    (run_dir / "summary.json").write_text(json.dumps(full))
    shutil.rmtree(run_dir / "pretrain")
    again = summary.build_summary(results.load_run(run_dir))
    assert again["learning"]["rtd"] == full["learning"]["rtd"] and again["verdict"] == full["verdict"]


def stored_runs():
    """The committed fixture, results/long-cpu and results/longer-cpu when this checkout has them, and any
    run folders listed in ELECTRA_BENCH_STORED_RUNS (os.pathsep-separated)."""
    root = Path(__file__).resolve().parents[1]
    paths = [FIXTURE_RUN, root / "results" / "long-cpu", root / "results" / "longer-cpu"]
    paths += [Path(p) for p in os.environ.get("ELECTRA_BENCH_STORED_RUNS", "").split(os.pathsep) if p]
    return [p for p in paths if (p / "scores.jsonl").is_file()]


@pytest.mark.parametrize("path", stored_runs(), ids=lambda p: p.name)
def test_invariants_hold_on_stored_real_runs(path):
    run = results.load_run(path)
    s = summary.build_summary(run)
    assert_invariants(s)
    assert invariant_violations(summary.load_or_build(run)) == []


def test_quick_fixture_headline_and_verdict():
    s = summary.build_summary(results.load_run(FIXTURE_RUN))
    assert s["verdict"]["kind"] == "too_small" and s["verdict"]["separated"] is False
    h = s["headline"]["rtd_reaches_mlm"]
    assert h["bound"] == "untrained" and h["percent"] is None
