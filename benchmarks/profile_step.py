"""Where one pre-training step's host time goes, phase by phase, as the trainer runs it (issue 32, part 1).

    python benchmarks/profile_step.py                          # tiny, mlm and rtd, 30 steps after 5 of warm-up
    python benchmarks/profile_step.py --preset small --batch-size 8 --steps 10
    python benchmarks/profile_step.py --device cuda --preset small   # on a GPU: synchronised after each phase

The trainer's loop body, phase by phase, with the trainer's own pieces (`trainer._Batches`, the objective's
`draw_noise` and `compute`, `pretrain/step.py`'s order of zero_grad / backward / clip / step): the batch and
the seed (gathered and derived for the next step while a device would run this one), the batch's copy to the
device, the learning-rate schedule and the step's generator, the draws (masking and sampling noise),
the forward (`compute`: masking, corruption, model, loss), backward, gradient clipping, the optimizer, the
non-finite flag, FLOP accounting, and a log row's reads (every `--log-every` steps, as the trainer). On CUDA
each phase is closed by a synchronize, so the table says where device time goes too (and the total is slower
than an unsynchronised step: compare tokens/s with bench_train, not with this). Prints a table: mean ms per
step and share of the step, per objective.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_train  # noqa: E402  (the same packed batch as the throughput benchmark)

from electra_bench import objectives, presets  # noqa: E402
from electra_bench.flops import step_flops  # noqa: E402
from electra_bench.special_tokens import DEFAULT as SPECIAL  # noqa: E402
from electra_bench.pretrain import optim  # noqa: E402
from electra_bench.pretrain.distributed import resolve_device  # noqa: E402
from electra_bench.pretrain.trainer import _Batches, _Order, read_metrics, seed_dropout  # noqa: E402

PHASES = ("batch and seed (prepared ahead)", "batch to the device", "schedule and generator", "draws", "forward", "backward", "clip", "optimizer", "finite flag",
          "FLOP accounting", "log row")


class Packed:
    """A SequenceSource of one repeated packed batch (bench_train's), so the data phase is the trainer's
    gathering without a corpus."""

    def __init__(self, batch: dict, n: int):
        self.rows = {k: v.cpu().repeat((n // len(v) + 1, 1))[:n] for k, v in batch.items()}
        self.seq_len = batch["input_ids"].shape[1]

    def __len__(self) -> int:
        return len(self.rows["input_ids"])

    def batch(self, idx: np.ndarray) -> dict:
        t = torch.from_numpy(idx)
        return {k: v[t] for k, v in self.rows.items()}


def profile(preset, objective: str, device: torch.device, steps: int, warmup: int, log_every: int) -> dict:
    p = preset.for_objective(objective)
    torch.manual_seed(0)
    model = objectives.build(objective, p, SPECIAL).to(device).train()
    optimizer = optim.pretraining_optimizer(model, p.optim, device)
    clip_params = [q for g in optimizer.param_groups for q in g["params"]]
    train = Packed(bench_train.packed_batch(p.schedule.batch_size, p.schedule.seq_len, p.model.encoder.vocab_size, device), 1024)
    d = type("D", (), {"rank": 0, "device": device})()
    batches = _Batches(train, _Order(len(train), 0), p.schedule.batch_size, p.schedule.batch_size, d, 0)
    fps = step_flops(p, objective, "measured").flops_per_step
    bad = torch.zeros((), dtype=torch.bool, device=device)
    times: dict[str, list[float]] = defaultdict(list)
    total = warmup + steps

    def mark(name: str, t0: float) -> float:
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        t1 = time.perf_counter()
        if step >= warmup:
            times[name].append(t1 - t0)
        return t1

    for step in range(total):
        t = time.perf_counter()
        batch, padded, seed = batches.get(step)
        t = mark("batch to the device", t)
        optim.set_lr(optimizer, optim.lr_at(step, total, p.optim.lr, p.schedule.warmup_fraction))
        seed_dropout(seed, device)
        rng = torch.Generator(device=device).manual_seed(seed)
        t = mark("schedule and generator", t)
        noise = model.draw_noise(batch, rng)
        t = mark("draws", t)
        result = model.compute(batch, noise, padded)
        t = mark("forward", t)
        optimizer.zero_grad(set_to_none=True)
        result.loss.backward()
        t = mark("backward", t)
        torch.nn.utils.clip_grad_norm_(clip_params, p.optim.grad_clip)
        t = mark("clip", t)
        optimizer.step()
        t = mark("optimizer", t)
        bad = bad | ~torch.isfinite(result.loss.detach())
        t = mark("finite flag", t)
        _ = (step + 1) * fps
        t = mark("FLOP accounting", t)
        if (step + 1) % log_every == 0:
            _ = bool(bad)  # as the trainer: the flag, then every metric in one read
            _ = read_metrics(result)
        t = mark("log row", t)
        if step + 1 < total:
            batches.prepare(step + 1)  # as the trainer: after the step, while a GPU would still be running it
        mark("batch and seed (prepared ahead)", t)
    means = {ph: 1e3 * statistics.fmean(times[ph]) for ph in PHASES}
    return {"ms": means, "step_ms": sum(means.values()), "flops_per_step": fps}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="tiny")
    ap.add_argument("--objectives", nargs="+", default=["mlm", "rtd"])
    ap.add_argument("--batch-size", type=int, default=None)
    ap.add_argument("--seq-len", type=int, default=None)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--log-every", type=int, default=10)
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    preset = presets.resolve(args.preset, presets.Overrides(batch_size=args.batch_size, seq_len=args.seq_len))
    results = {o: profile(preset, o, device, args.steps, args.warmup, args.log_every) for o in args.objectives}
    print(f"# profile_step: {args.preset} {preset.schedule.batch_size}x{preset.schedule.seq_len}, {device}, "
          f"{torch.get_num_threads()} threads, {args.steps} steps after {args.warmup}; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    head = "| phase | " + " | ".join(f"{o} ms | {o} share" for o in results) + " |"
    print(head)
    print("|---|" + "---|---|" * len(results))
    for ph in PHASES:
        cells = " | ".join(f"{r['ms'][ph]:.3f} | {100 * r['ms'][ph] / r['step_ms']:.1f}%" for r in results.values())
        print(f"| {ph} | {cells} |")
    print("| step | " + " | ".join(f"{r['step_ms']:.2f} | 100%" for r in results.values()) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
