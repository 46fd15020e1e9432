#!/usr/bin/env python
"""The online-code (MDL) column of docs/suite.md's sensitivity table, measured on a finished compare run.

For each pre-training seed of RUN: the untrained encoder of that seed and each objective's final checkpoint;
for each classification task: the probe protocol's training pool (the same seed-independent sample of
`probe_pool` examples, then `probe_examples` of it per evaluation seed, as the probe draws them), its labels
sent with the online code of electra_bench/score/mdl.py in a seed-dependent order. Per task and objective:
the bits an example the trained encoder saves over the untrained one (paired by pre-training and evaluation
seed), its standard error, z = saving / SE and the 95% CI (Student's t). With several pre-training seeds the
interval is over the pre-training seeds, each the mean of its evaluation seeds (4 seeds: t quantile 3.18, so
a task separates at z above 3.18, not 2); with one, over the evaluation seeds. The CPU seconds per encoder
(all tasks, one evaluation seed), for the sensitivity per CPU-second.

    python scripts/mdl_probe.py RUN [--seeds 3] [--json FILE] [--md]

With one pre-training seed the SE is over the evaluation seeds (which examples, in which order) and leaves
out the pre-training seed's noise, as the probe's one-seed intervals do.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

from electra_bench.data.task_sources import load_tasks
from electra_bench.experiments.references import spec_of_run
from electra_bench.experiments.work import prepare
from electra_bench.objectives import initial_encoder
from electra_bench.pretrain import checkpoint
from electra_bench.score.finetune import _features_for, _sample
from electra_bench.score.mdl import online_codelength
from electra_bench.score.scoring import recipe_for


def encoders(run: Path, spec, p):
    """(label, pre-training seed, encoder): the untrained encoder and every objective's final checkpoint."""
    for s in range(spec.pretrain_seeds):
        yield "init", s, initial_encoder(p.model.encoder, s)
        for objective in spec.objectives:
            ckpt = run / "pretrain" / objective / f"seed-{s}" / "checkpoints" / "frac-1.0000"
            yield objective, s, checkpoint.load_encoder(ckpt)[0]


def units_of(pairs: list[float], pretrain_seeds: int, seeds: int) -> list[float]:
    """The independent units the interval is taken over: with several pre-training seeds, each seed's mean
    over its evaluation seeds (the evaluation seeds of one encoder share its noise, so counting them as
    independent would leave the pre-training seed's noise out of the interval); with one, the pairs."""
    if pretrain_seeds < 2:
        return pairs
    return [statistics.fmean(pairs[s * seeds:(s + 1) * seeds]) for s in range(pretrain_seeds)]


def measure(run: Path, seeds: int) -> dict:
    spec = spec_of_run(json.loads((run / "config.json").read_text()), device="cpu")
    data, p, _, _ = prepare(spec)
    recipe = recipe_for({"seq_len": p.schedule.seq_len}, "probe", probe_pool=spec.probe_pool,
                        probe_examples=spec.probe_examples)
    tasks = [t for t in load_tasks(spec.source, list(spec.tasks) if spec.tasks else None) if not t.spec.regression]
    bits: dict = {}  # (label, pretrain seed, task, eval seed) -> bits per example
    cpu: dict = {}  # label -> CPU seconds per encoder and evaluation seed, all tasks
    for label, s, encoder in encoders(run, spec, p):
        t0, cache = time.process_time(), {}
        for task in tasks:
            train = task.splits["train"]
            pool = _sample(len(train), recipe.probe_pool, -1)
            y_all = np.array([ex.label for ex in train], dtype=np.int64)
            for e in range(seeds):
                idx = pool[_sample(len(pool), recipe.probe_examples, e)]
                X = _features_for(cache, (task.spec.name, "train"), encoder, data.tokenizer, train, idx,
                                  recipe.max_len, "cpu")
                code = online_codelength(X, y_all[idx], task.spec.num_labels, seed=e)
                bits[(label, s, task.spec.name, e)] = (code.bits_per_example, code.compression)
        cpu.setdefault(label, []).append((time.process_time() - t0) / seeds)
        print(f"{label} seed {s}: {cpu[label][-1]:.1f} CPU-s per evaluation seed", file=sys.stderr)
    pairs_of = [(s, e) for s in range(spec.pretrain_seeds) for e in range(seeds)]

    def mean(label, name, i):  # i: 0 bits an example, 1 compression
        return statistics.fmean(bits[(label, s, name, e)][i] for s, e in pairs_of)

    rows = []
    for task in tasks:
        name = task.spec.name
        for objective in spec.objectives:
            pairs = [bits[("init", s, name, e)][0] - bits[(objective, s, name, e)][0] for s, e in pairs_of]
            units = units_of(pairs, spec.pretrain_seeds, seeds)
            saving = statistics.fmean(units)
            se = statistics.stdev(units) / len(units) ** 0.5 if len(units) > 1 else float("nan")
            half = float(stats.t.ppf(0.975, len(units) - 1)) * se if len(units) > 1 else float("nan")
            rows.append({"task": name, "objective": objective, "pairs": len(pairs), "units": len(units),
                         "pair_savings": pairs,
                         "untrained_bits": mean("init", name, 0), "untrained_compression": mean("init", name, 1),
                         "compression": mean(objective, name, 1),
                         "saving_bits": saving, "se": se, "z": saving / se if se and se > 0 else None,
                         "ci": [saving - half, saving + half], "separates": saving - half > 0})
    return {"run": str(run), "seeds": seeds, "rows": rows,
            "cpu_s_per_encoder_seed": {k: statistics.fmean(v) for k, v in cpu.items()}}


def markdown(result: dict) -> str:
    out = ["| task | untrained: bits/example (compression) | objective | compression | saving, bits/example "
           "[95% CI] (z) |", "|---|---|---|---|---|"]
    for r in result["rows"]:
        z = "n/a" if r["z"] is None else f"{r['z']:+.1f}"
        out.append(f"| {r['task']} | {r['untrained_bits']:.3f} ({r['untrained_compression']:.3f}) | {r['objective']} "
                   f"| {r['compression']:.3f} | {r['saving_bits']:+.4f} [{r['ci'][0]:+.4f}, {r['ci'][1]:+.4f}] (z {z})"
                   + (" * |" if r["separates"] else " |"))
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--seeds", type=int, default=3, help="evaluation seeds (which examples, in which order)")
    ap.add_argument("--json", type=Path, help="write the result here")
    ap.add_argument("--md", action="store_true", help="print a Markdown table")
    args = ap.parse_args(argv)
    # one thread, as compare's workers run: the CPU seconds are then the work's, not BLAS threads spinning
    # beside busy cores (measured: 34-37 CPU-s an evaluation seed with them, 4.1-5.4 with one)
    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(1)
    with threadpool_limits(limits=1):
        result = measure(args.run, args.seeds)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    print(markdown(result) if args.md else json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
