"""`finetune-tuned`: the `finetune` recipe with its learning rate and epochs chosen per (encoder, task).

Why: the paper's recipe (lr 3e-4 for small presets, 3 epochs) puts both pre-trained `tiny` encoders below
the untrained one on sentiment, and a probe of the lr alone moved those scores by 10-20 points; the paper
itself chose lr per task for GLUE. Meant for small presets (CPU scale); it runs on any preset.

The rule, the same for every encoder (the untrained one too):
- the grid: `Recipe.tune_lrs` x `Recipe.tune_epochs` (default {1e-4, 3e-4, 1e-3, 3e-3} x {3, 10}), always
  with the recipe's own lr and the task's paper epochs (`Recipe.epochs_for`) added, so the paper's values
  are candidates;
- the training split is cut once, independently of any seed, into a 90% fitting part and a 10% held-out
  part (`heldout_split`); the fitting part is capped at `Recipe.tune_max_train` examples and the held-out
  part at `Recipe.tune_max_heldout` (fixed samples) to bound the cost;
- a grid point fine-tunes a fresh copy of the encoder on the fitting part with the fixed selection seed
  (`SELECTION_SEED`) and is scored on the held-out part by the task's primary metric; a point whose loss
  turns non-finite, or whose metric is undefined, scores -inf;
- the search (`Recipe.tune_search`): "coordinate" (the default) fits every lr at the task's paper epochs,
  then the other epochs at the best of those lrs (5 fits, 22 epochs of the fitting part on the default
  grid); "grid" fits every point (8 fits, 52 epochs). Coordinate search is what made the measured cost
  affordable on 2 CPU cores (docs/suite.md, "Fine-tuning tuned for small encoders");
- the best score wins; ties go to the earlier point (lower lr, then fewer epochs).
The dev split is never read here. The choice is made once per (encoder, task, recipe) and kept in the
caller's cache across evaluation seeds (score_encoder's); each evaluation seed then fine-tunes on the whole
training split with the chosen values and scores dev as `finetune` does (score/finetune.evaluate).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..data.tasks import TaskData
from ..errors import BenchError
from .metrics import compute

HELDOUT_FRACTION = 0.1
MIN_HELDOUT = 30  # fewer held-out examples than this cannot rank the grid: a one-line error
SELECTION_SEED = 0  # the head's draw and the batches' order of every selection fit, whatever the evaluation seed


@dataclass(frozen=True)
class Choice:
    """What the selection chose, and every grid point's held-out score ((lr, epochs) -> primary metric)."""
    lr: float
    epochs: int
    metric: str
    heldout: dict
    n_fit: int
    n_heldout: int


SEARCHES = ("coordinate", "grid")


def grid(recipe, task_name: str) -> tuple[list[float], list[int]]:
    """(lrs, epochs) candidates, each ascending: the recipe's grid plus its own lr and the task's paper
    epochs."""
    return (sorted(set(recipe.tune_lrs) | {recipe.lr}),
            sorted(set(recipe.tune_epochs) | {recipe.epochs_for(task_name)}))


def _best(scores: dict[tuple[float, int], float]) -> tuple[float, int]:
    """The best point; ties to the lower lr, then fewer epochs."""
    top = max(scores.values())
    return min(k for k, v in scores.items() if v == top)


def heldout_split(n_train: int, task_name: str, max_fit: int | None, max_heldout: int | None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(fitting indices, held-out indices) into a training split of `n_train` examples: a fixed,
    seed-independent permutation, its first 10% held out, each part capped by a fixed sample."""
    n_held = int(n_train * HELDOUT_FRACTION)
    if n_held < MIN_HELDOUT:
        raise BenchError(f"task {task_name}: {n_train} training examples leave {n_held} held out (10%), fewer than "
                         f"the {MIN_HELDOUT} finetune-tuned needs to choose lr and epochs; use --protocol finetune")
    perm = np.random.default_rng([n_train, 20261207]).permutation(n_train)
    held, fit = perm[:n_held], perm[n_held:]
    if max_fit is not None and len(fit) > max_fit:
        fit = fit[:max_fit]  # the permutation is already random: its first k are a fixed sample
    if max_heldout is not None and len(held) > max_heldout:
        held = held[:max_heldout]
    return np.sort(fit), np.sort(held)


def _score_or_floor(metric: str, preds: np.ndarray, labels: np.ndarray) -> float:
    value = compute([metric], preds, labels)[metric]
    return value if value is not None and math.isfinite(value) else -math.inf


def choose(task, recipe, fit_predict: Callable[[TaskData, list, float, int], np.ndarray]) -> Choice:
    """Run the selection (module docstring) on one task; reads only task.splits["train"].
    `fit_predict(part, held, lr, epochs)`: fine-tune one encoder's fresh copy on `part` (a TaskData whose
    train split is the fitting part) with the fixed selection seed, and predict `held` (what the metrics
    read); score/finetune.py passes its loop (that module imports this one)."""
    spec = task.spec
    train = task.splits["train"]
    fit_idx, held_idx = heldout_split(len(train), spec.name, recipe.tune_max_train, recipe.tune_max_heldout)
    part = TaskData(spec=spec, splits={"train": [train[i] for i in fit_idx]}, source=task.source)
    held = [train[i] for i in held_idx]
    labels = np.array([ex.label for ex in held], dtype=np.float64 if spec.regression else np.int64)
    scores: dict[tuple[float, int], float] = {}

    def run(points) -> None:
        for lr, epochs in points:
            try:
                preds = fit_predict(part, held, lr, epochs)
            except BenchError as e:  # a non-finite loss: this lr diverges, it loses
                if "non-finite" not in str(e):
                    raise
                scores[(lr, epochs)] = -math.inf
                continue
            scores[(lr, epochs)] = _score_or_floor(spec.primary, preds, labels)

    lrs, epochs_grid = grid(recipe, spec.name)
    if recipe.tune_search == "grid":
        run([(lr, e) for lr in lrs for e in epochs_grid])
    elif recipe.tune_search == "coordinate":
        paper = recipe.epochs_for(spec.name)
        run([(lr, paper) for lr in lrs])
        lr0, _ = _best(scores)
        run([(lr0, e) for e in epochs_grid if e != paper])
    else:
        raise BenchError(f"unknown tune_search '{recipe.tune_search}': choose one of {', '.join(SEARCHES)}")
    if max(scores.values()) == -math.inf:
        raise BenchError(f"task {spec.name}: no (lr, epochs) finetune-tuned tried gave a finite held-out "
                         f"{spec.primary}; every fit diverged or predicted a constant")
    lr, epochs = _best(scores)
    return Choice(lr=lr, epochs=epochs, metric=spec.primary, heldout=scores, n_fit=len(fit_idx),
                  n_heldout=len(held_idx))


def selection_work(recipe, task_name: str, n_train: int) -> tuple[int, int, int]:
    """What sizing counts for one (encoder, task) (experiments/sizing.py): (training examples x epochs over
    the selection fits, held-out examples predicted, the most epochs a final fit may take)."""
    n_held = int(n_train * HELDOUT_FRACTION)
    n_fit = min(n_train - n_held, recipe.tune_max_train or n_train)
    n_held = min(n_held, recipe.tune_max_heldout or n_held)
    lrs, epochs = grid(recipe, task_name)
    if recipe.tune_search == "grid":
        fits = [e for _ in lrs for e in epochs]
    else:
        paper = recipe.epochs_for(task_name)
        fits = [paper] * len(lrs) + [e for e in epochs if e != paper]
    return n_fit * sum(fits), n_held * len(fits), max(epochs)
