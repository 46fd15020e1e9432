"""finetune-tuned (score/tuning.py): lr and epochs chosen on a held-out part of the training split, never
on dev; the choice recorded beside the scores and never scored."""

import dataclasses
import random

import numpy as np
import pytest
import torch

from electra_bench.data.tasks import TaskData
from electra_bench.errors import BenchError
from electra_bench.experiments import sizing
from electra_bench.score import tuning
from electra_bench.score.finetune import Recipe, evaluate, selection_fit
from electra_bench.score.scoring import score_encoder
from electra_bench.store import runs as results
from electra_bench.summarise import summary
from electra_bench.summarise.invariants import invariant_violations
from test_score_finetune import WORDS, _encoder, tokenizer  # noqa: F401  (a fixture)
from test_score_finetune import _keyword_task as keyword_task

CPU = torch.device("cpu")
# small and quick: two lrs far apart, 6 epochs (the "paper's") or 1 (the default grid is tested by name)
RECIPE = Recipe(protocol="finetune-tuned", lr=1e-5, max_len=16, epochs=6, tune_lrs=(1e-5, 3e-3), tune_epochs=(1,))


def _keyword_task(n_train=400, n_dev=96, seed=0, regression=False):
    """Label 1 when the sentence holds 'good', 0 when 'bad': lr 3e-3 learns it in 6 epochs, 1e-5 does not."""
    return keyword_task(n_train, n_dev, seed, regression, k=6)


class _Untouchable(list):
    """A split whose every read fails: what the selection must never look at."""

    def __getitem__(self, i):
        raise AssertionError("the selection read the dev split")

    def __iter__(self):
        raise AssertionError("the selection read the dev split")

    def __len__(self):
        raise AssertionError("the selection read the dev split")


@pytest.fixture(scope="module")
def tuned(tokenizer):
    """The tuned protocol's scores on the keyword task, evaluation seed 0, and its selection's cache."""
    cache = {}
    metrics = evaluate(_encoder(tokenizer.vocab_size), _keyword_task(), tokenizer, RECIPE, 0, CPU, cache)
    return metrics, cache


def test_a_clearly_better_high_lr_is_chosen_recorded_and_from_the_grid(tuned):
    metrics, cache = tuned
    (choice,) = cache.values()
    lrs, epochs = tuning.grid(RECIPE, "keyword")
    assert (metrics["tuned_lr"], metrics["tuned_epochs"]) == (choice.lr, choice.epochs)
    assert metrics["tuned_lr"] in lrs and metrics["tuned_epochs"] in epochs
    assert metrics["tuned_lr"] == 3e-3, choice.heldout  # 1e-5 learns nothing in 6 epochs
    assert choice.heldout[(3e-3, choice.epochs)] > choice.heldout[(1e-5, 6)] + 20, choice.heldout
    assert metrics["accuracy"] > 75, metrics  # and the final fit with it learns the task on dev
    assert choice.n_fit == 360 and choice.n_heldout == 40  # 90 / 10 of 400
    # coordinate search: both lrs at the paper's epochs, then the other epochs at the better lr only
    assert set(choice.heldout) == {(1e-5, 6), (3e-3, 6), (3e-3, 1)}


def test_the_selection_never_reads_dev(tokenizer, tuned):
    task = _keyword_task()
    blind = TaskData(spec=task.spec, splits={"train": task.splits["train"], "dev": _Untouchable()}, source="test")
    state = {k: v.clone() for k, v in _encoder(tokenizer.vocab_size).state_dict().items()}
    choice = tuning.choose(blind, RECIPE, selection_fit(state, _encoder(tokenizer.vocab_size).cfg, tokenizer,
                                                          RECIPE, CPU))
    assert choice == next(iter(tuned[1].values()))  # the same choice as with a readable dev split
    # dev labels shuffled: the same choice; the dev score (read after the choice) moves
    rng = random.Random(5)
    shuffled = [dataclasses.replace(ex, label=rng.randint(0, 1)) for ex in task.splits["dev"]]
    other = evaluate(_encoder(tokenizer.vocab_size), TaskData(task.spec, {**task.splits, "dev": shuffled}, "test"),
                     tokenizer, RECIPE, 0, CPU)
    assert (other["tuned_lr"], other["tuned_epochs"]) == (tuned[0]["tuned_lr"], tuned[0]["tuned_epochs"])
    assert other["accuracy"] != tuned[0]["accuracy"]


def test_deterministic_and_chosen_once_across_evaluation_seeds(tokenizer, tuned, monkeypatch):
    again = evaluate(_encoder(tokenizer.vocab_size), _keyword_task(), tokenizer, RECIPE, 0, CPU)
    assert again == tuned[0]  # same seed, same numbers
    calls = []
    choose = tuning.choose
    monkeypatch.setattr(tuning, "choose", lambda *a: calls.append(1) or choose(*a))
    rows = score_encoder(_encoder(tokenizer.vocab_size), tokenizer, [_keyword_task()], [0, 1], RECIPE, CPU)
    assert len(calls) == 1  # one selection for both evaluation seeds
    by = {(r["seed"], r["metric"]): r["value"] for r in rows}
    assert {m for _, m in by} == {"accuracy", "tuned_lr", "tuned_epochs"}  # recorded as rows
    assert by[(0, "tuned_lr")] == by[(1, "tuned_lr")] == tuned[0]["tuned_lr"]
    assert by[(0, "accuracy")] == tuned[0]["accuracy"]


def test_a_training_split_too_small_to_hold_out_is_one_clear_error(tokenizer):
    task = _keyword_task(n_train=10 * tuning.MIN_HELDOUT - 1)
    with pytest.raises(BenchError) as e:
        evaluate(_encoder(tokenizer.vocab_size), task, tokenizer, RECIPE, 0, CPU)
    assert "\n" not in str(e.value) and "held out" in str(e.value) and "--protocol finetune" in str(e.value)
    fit, held = tuning.heldout_split(10 * tuning.MIN_HELDOUT, "keyword", None, None)  # the smallest allowed
    assert len(held) == tuning.MIN_HELDOUT and len(fit) == 9 * tuning.MIN_HELDOUT


def test_the_held_out_part_is_fixed_disjoint_and_capped():
    fit, held = tuning.heldout_split(10000, "t", 2000, 500)
    again = tuning.heldout_split(10000, "t", 2000, 500)
    assert np.array_equal(fit, again[0]) and np.array_equal(held, again[1])  # no seed: always the same cut
    assert len(fit) == 2000 and len(held) == 500 and not set(fit) & set(held)
    full_fit, full_held = tuning.heldout_split(10000, "t", None, None)
    assert len(full_held) == 1000 and len(full_fit) == 9000 and set(held) <= set(full_held)


def test_the_default_grid_holds_the_papers_values_and_sizing_counts_the_selection():
    r = Recipe(protocol="finetune-tuned")
    lrs, epochs = tuning.grid(r, "vader-rating")
    assert lrs == [1e-4, 3e-4, 1e-3, 3e-3] and epochs == [3, 10] and r.lr in lrs
    assert tuning.grid(dataclasses.replace(r, lr=5e-5), "rte") == ([5e-5, 1e-4, 3e-4, 1e-3, 3e-3], [3, 10])
    # coordinate: 4 lrs x 3 epochs + 10 epochs at the best, on 2000 of the 90%
    assert tuning.selection_work(r, "vader-rating", 10839) == (2000 * 22, 1083 * 5, 10)
    assert tuning.selection_work(dataclasses.replace(r, tune_search="grid"), "x", 10839) == (2000 * 52, 1083 * 8, 10)
    plain = sizing.task_flops(1.0, "finetune", 10839, 2000, 3, 1, 3000, None)
    tuned = sizing.task_flops(1.0, "finetune-tuned", 10839, 2000, 3, 1, 3000, None,
                              tuning.selection_work(r, "vader-rating", 10839))
    assert tuned == 3 * 2000 * 22 + 1083 * 5 + 3 * 10 * 10839 + 2000 and tuned > plain


def test_recorded_choices_are_not_scored_by_the_summary(tmp_path):
    """Rows of tuned_lr / tuned_epochs beside the scores change no score, statistic or verdict."""
    rng = np.random.default_rng(0)

    def run(with_choice: bool, name: str):
        r = results.open_run(tmp_path, name, {"preset": "tiny"})
        for obj, frac in (("init", 0.0), ("mlm", 1.0), ("rtd", 1.0)):
            for s in (0, 1):
                rows = []
                for e in (0, 1):
                    base = dict(objective=obj, fraction=frac, step=int(frac * 100), train_flops=frac * 1e13,
                                convention="measured", task="toy", seed=e, protocol="finetune-tuned", pretrain_seed=s)
                    rows.append({**base, "metric": "accuracy", "value": float(50 + 10 * frac + s + e)})
                    if with_choice:
                        rows += [{**base, "metric": "tuned_lr", "value": float(rng.choice([1e-4, 3e-3]))},
                                 {**base, "metric": "tuned_epochs", "value": 10.0}]
                r.store_scored({"rows": rows, "predictions": []})
        return summary.build_summary(r)

    plain, recorded = run(False, "plain"), run(True, "recorded")
    assert recorded["main_protocol"] == "finetune-tuned" and invariant_violations(recorded) == []
    a, b = plain["protocols"]["finetune-tuned"], recorded["protocols"]["finetune-tuned"]
    assert [p["score"]["value"] for p in a["points"]] == [p["score"]["value"] for p in b["points"]]
    assert b["points"][0]["tasks"]["toy"]["primary_metric"] == "accuracy"
    assert b["statistics"]["differences"] == a["statistics"]["differences"]
    assert recorded["verdict"] == plain["verdict"]


def test_the_finetune_command_reports_the_choice_and_the_grid(tokenizer, monkeypatch):
    """`electra-bench finetune CHECKPOINT --protocol finetune-tuned --json`'s result (score_checkpoint), on the
    default grid: tuned_lr / tuned_epochs among its results and rows, the grid in its recipe."""
    from electra_bench.score import scoring

    meta = {"seq_len": 16, "objective": "mlm", "train_flops": 1.0}
    monkeypatch.setattr(scoring, "load_scorable", lambda _: (_encoder(tokenizer.vocab_size), tokenizer, meta))
    monkeypatch.setattr(scoring, "load_tasks", lambda source, names: [_keyword_task()])
    out = scoring.score_checkpoint("ckpt", None, None, 2, "finetune-tuned", "cpu")
    results = {r["metric"]: r for r in out["results"]}
    assert set(results) == {"accuracy", "tuned_lr", "tuned_epochs"}
    assert results["tuned_lr"]["min"] == results["tuned_lr"]["max"] in (1e-4, 3e-4, 1e-3, 3e-3)  # once per task
    assert results["tuned_epochs"]["median"] in (3, 10) and results["accuracy"]["n_seeds"] == 2
    assert out["recipe"]["tuning"] == {"lrs": [1e-4, 3e-4, 1e-3, 3e-3], "epochs": [3, 10], "search": "coordinate",
                                       "max_train": 2000, "max_heldout": 2000}
    assert {r["metric"] for r in out["rows"]} == set(results)
