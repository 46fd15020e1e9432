"""Synthetic compare runs with a known truth, for measuring the statistics (scripts/bootstrap_coverage.py,
plan_check.py, sequential_sim.py; tests/test_summarise_coverage.py).

A design is what `summarise/bootstrap.multibootstrap` reads from a real run: two arms (mlm, rtd), n
pre-training seeds each (paired: seed k of both arms), evaluation seeds inside each, and per task the dev
labels and every run's predictions. Five tasks by default, of unequal dev size, as the embedded suite has:
two binary accuracy tasks (600 and 2,500 examples), a 3-class accuracy task (1,500), a binary task scored
by MCC (2,400) and a regression task scored by Spearman (2,000); the suite score is their mean.

How a run predicts. Example i of a classification task is answered right when U < q, with
    q = mu_arm + seed effect + evaluation-seed shift + difficulty_i + (arm x example effect)_i,
difficulty +-w (easy or hard examples, as real dev sets hold: it makes a run's answers mostly
deterministic), the arm x example effect the same for every seed (the part of the example noise that all
seeds share in a difference), and U uniform: **each pre-training seed draws its own U** (its own
per-example luck). Two generative models:
- `independent`: the two arms' U are independent (each seed of each objective its own example effects);
- `shared`: both arms at seed k share U (the model the earlier coverage script had, under which a seed's
  own example noise nearly cancels in a difference, so counting it twice could not show).
A wrong answer is another class. The regression task predicts (slope_arm + seed effect) x y_i + an
example effect both arms share + the arm x example effect + each seed's own noise. Seed effects: a part common to both arms at a seed (cancels in a
paired difference) and a seed x objective interaction, both Student t with 3 degrees of freedom (heavy
tails), scaled per task: the MCC and Spearman tasks carry most of it, as in results/multiseed-cpu.

Noise matched to results/multiseed-cpu's final RTD - MLM (suite scale): per-seed variance 1.37 (of which
each seed's own example noise 0.42), shared example variance 0.04 (`calibration()` measures a model).
Truth: under the null (`delta` 0) the arms are exchangeable, so the true difference is exactly 0; with
`delta` > 0, RTD's mu (and rho) are raised by delta and the truth is a large Monte Carlo average
(`true_difference`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from electra_bench.summarise.bootstrap import TaskData, metric_values


@dataclass(frozen=True)
class Task:
    name: str
    metric: str
    n: int
    classes: int  # 0: regression
    mu: float  # probability of a right answer (classification) or the slope on the label (regression)
    w: float  # difficulty: +-w (classification); SD of the example effect both arms share (regression)
    arm_example: float  # SD of the arm x example effect, shared by seeds
    seed_common: float  # SD of the seed effect both arms share at a seed
    seed_inter: float  # SD of the seed x objective interaction
    own: float = 0.0  # regression: SD of each seed's own per-example noise (classification: its luck, U)


TASKS = (
    Task("pairs", "accuracy", 600, 2, 0.58, 0.40, 0.10, 0.010, 0.004),
    Task("sentiment", "accuracy", 2500, 2, 0.60, 0.40, 0.10, 0.010, 0.004),
    Task("three-way", "accuracy", 1500, 3, 0.55, 0.40, 0.10, 0.010, 0.004),
    Task("scramble", "mcc", 2400, 2, 0.80, 0.19, 0.12, 0.030, 0.022),
    Task("rating", "spearman", 2000, 0, 0.30, 0.75, 0.22, 0.010, 0.015, own=0.60),
)
MODELS = ("independent", "shared")
EVAL_SEEDS = 2
EVAL_SD = 0.003


def _t3(rng, size) -> np.ndarray:
    """Student t with 3 degrees of freedom, scaled to unit variance."""
    return rng.standard_t(3, size) / np.sqrt(3.0)


def _luck(rng, y, classes: int, n_seeds: int) -> tuple[np.ndarray, np.ndarray]:
    """Each seed's own per-example luck (U) and the class it answers when wrong."""
    wrong = (y + rng.integers(1, classes, (n_seeds, len(y)))) % classes
    return rng.random((n_seeds, len(y))), wrong


def task_data(rng, task: Task, n_seeds: int, model: str, delta: float = 0.0, eval_seeds: int = EVAL_SEEDS
              ) -> TaskData:
    """One task of one design: fresh dev examples, seed effects and per-seed luck."""
    n = task.n
    mu = {"mlm": task.mu, "rtd": task.mu + delta}
    common = task.seed_common * _t3(rng, n_seeds)
    inter = {a: task.seed_inter * _t3(rng, n_seeds) for a in mu}
    shift = {a: EVAL_SD * rng.standard_normal((n_seeds, eval_seeds, 1)) for a in mu}
    arm_ex = {a: task.arm_example * rng.standard_normal(n) for a in mu}
    preds: dict = {a: {} for a in mu}
    if task.classes:
        y = rng.integers(0, task.classes, n)
        difficulty = task.w * np.where(rng.random(n) < 0.5, 1.0, -1.0)
        luck, wrong = _luck(rng, y, task.classes, n_seeds)
        for a in mu:
            if model == "independent" and a == "rtd":
                luck, wrong = _luck(rng, y, task.classes, n_seeds)
            effect = (common + inter[a])[:, None, None] + shift[a]  # (seeds, evals, 1)
            q = np.clip(mu[a] + effect + difficulty + arm_ex[a], 0.0, 1.0)
            right = luck[:, None, :] < q
            out = np.where(right, y, np.broadcast_to(wrong[:, None, :], right.shape))
            preds[a] = {s: out[s].astype(np.int16) for s in range(n_seeds)}
    else:
        y = np.round(rng.standard_normal(n), 1)  # ties, as a rating's labels have
        example = task.w * rng.standard_normal(n)
        own = task.own * rng.standard_normal((n_seeds, n))
        for a in mu:
            if model == "independent" and a == "rtd":
                own = task.own * rng.standard_normal((n_seeds, n))
            slope = mu[a] + (common + inter[a])[:, None, None] + shift[a]
            out = slope * y + example + arm_ex[a] + own[:, None, :]
            preds[a] = {s: np.round(out[s], 2) for s in range(n_seeds)}
    return TaskData(task.name, y, preds, {task.metric: 1.0 / len(TASKS)})


def design(rng, n_seeds: int, model: str = "independent", delta: float = 0.0, tasks=TASKS,
           eval_seeds: int = EVAL_SEEDS) -> list[TaskData]:
    if model not in MODELS:
        raise ValueError(f"model {model!r}: one of {MODELS}")
    out = [task_data(rng, t, n_seeds, model, delta, eval_seeds) for t in tasks]
    for t in out:  # the suite mean over these tasks
        t.metrics = {m: 1.0 / len(tasks) for m in t.metrics}
    return out


def suite_values(tasks: list[TaskData]) -> dict[str, np.ndarray]:
    """Per arm, each pre-training seed's suite score on the dev sets as they are (mean over evaluation
    seeds): what a paired t over seeds reads."""
    out = {}
    for a in tasks[0].preds:
        seeds = sorted(tasks[0].preds[a])
        v = np.zeros(len(seeds))
        for t in tasks:
            (metric, w), = t.metrics.items()
            for k, s in enumerate(seeds):
                v[k] += w * metric_values(metric, t.preds[a][s], t.labels, np.ones((1, len(t.labels))))[:, 0].mean()
        out[a] = v
    return out


def true_difference(delta: float, model: str = "independent", designs: int = 400, seed: int = 12345,
                    tasks=TASKS) -> float:
    """E[RTD - MLM] of the suite score at this delta: 0 exactly under the null, else a Monte Carlo mean
    over `designs` designs of 8 seeds (its standard error is a few hundredths of a point)."""
    if delta == 0:
        return 0.0
    rng = np.random.default_rng(seed)
    diffs = []
    for _ in range(designs):
        v = suite_values(design(rng, 8, model, delta, tasks, eval_seeds=1))
        diffs.append(float(np.mean(v["rtd"] - v["mlm"])))
    return float(np.mean(diffs))


def calibration(model: str = "independent", designs: int = 30, n_seeds: int = 8, n_boot: int = 200,
                seed: int = 7) -> dict:
    """The model's noise on the suite difference, averaged over designs, in the statistics' own split
    (summarise/interval.split): per-seed variance, each seed's own example noise, shared example noise."""
    from electra_bench.summarise import bootstrap, interval

    rng = np.random.default_rng(seed)
    acc = {"per_seed_variance": [], "own_per_seed": [], "shared": []}
    for d in range(designs):
        reps = bootstrap.multibootstrap(design(rng, n_seeds, model), n_boot, seed=d)
        s = interval.split(reps, None, {"rtd": 1.0, "mlm": -1.0})
        acc["per_seed_variance"].append(s.per_seed_variance)
        acc["own_per_seed"].append(s.own * n_seeds)
        acc["shared"].append(s.shared)
    return {k: float(np.mean(v)) for k, v in acc.items()}
