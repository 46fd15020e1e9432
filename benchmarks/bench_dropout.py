"""Before/after of the CPU dropout masks, side by side in one process.

    python benchmarks/bench_dropout.py            # small mlm and rtd at 32x128, tiny mlm as the control

"before" is the trainer's step with `model._cpu_eager` forced off, so dropout is torch's F.dropout
(bernoulli_ masks) and attention is SDPA with its own dropout; "after" is the step as it runs now
(`model.dropout`'s 16-bit masks, explicit attention when dropout is on). Windows alternate before, after,
before, ... so drift hits both; the median window is reported. tiny has dropout 0: both paths are the same
code there, so its ratio shows the noise floor.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_train  # noqa: E402  (the same runner and batch as the throughput benchmark)

from electra_bench import model as M  # noqa: E402
from electra_bench import presets  # noqa: E402

CASES = (("small", "mlm", 32, 2), ("small", "rtd", 32, 2), ("tiny", "mlm", None, 20))


def _set_before(before: bool, real=M._cpu_eager) -> None:
    M._cpu_eager = (lambda x: False) if before else real


def ab(name: str, objective: str, batch_size: int | None, steps: int, repeats: int) -> tuple[float, float, int]:
    p = presets.resolve(name, presets.Overrides(batch_size=batch_size))
    dev = torch.device("cpu")
    runner = bench_train.build_ours(p, objective, bench_train.packed_batch(p.schedule.batch_size, p.schedule.seq_len,
                                                                           p.model.encoder.vocab_size, dev), dev, False)

    def step(before: bool):
        def run(i: int):
            _set_before(before)  # an attribute set per step: nanoseconds against a step of milliseconds
            return runner.step(i)
        return run

    steps_by = {"before": step(True), "after": step(False)}
    for i, run in enumerate(steps_by.values()):  # one untimed step each
        run(i)
    times, _ = bench_train.alternating_windows(steps_by, steps, repeats, 2, dev)
    _set_before(False)
    return (statistics.median(times["before"]) / steps, statistics.median(times["after"]) / steps,
            p.schedule.batch_size * p.schedule.seq_len)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    print(f"# load average {[round(x, 2) for x in os.getloadavg()]}; threads {torch.get_num_threads()}")
    print("| preset | objective | batch x seq | before tok/s (bernoulli_, SDPA) | after tok/s (16-bit masks) | speed-up |")
    print("|---|---|---|---|---|---|")
    for name, objective, batch_size, steps in CASES:
        before, after, tokens = ab(name, objective, batch_size, steps, args.repeats)
        print(f"| {name} | {objective} | {batch_size or presets.get(name).schedule.batch_size}x{presets.get(name).schedule.seq_len} "
              f"| {tokens / before:,.0f} | {tokens / after:,.0f} | {before / after:.2f}x |", flush=True)
    print(f"# load average {[round(x, 2) for x in os.getloadavg()]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
