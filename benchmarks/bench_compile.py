"""Our training step eager vs torch.compile'd (as `pretrain --compile` runs it), side by side in one process.

    python benchmarks/bench_compile.py                         # tiny mlm and rtd, inductor
    python benchmarks/bench_compile.py --presets small --batch-size 32

Two copies of the model (same initialisation), one eager, one compiled with `trainer.compile_forward`;
after warm-up (which includes the compilation, timed as `compile_s`), windows alternate eager, compiled,
eager, ... and the median window is reported. Compiled numbers are not bit-identical to eager (fused
kernels round differently, and inductor draws its own dropout masks), which is one reason compile is off
by default; this measures the other: whether it is faster on this CPU.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_train  # noqa: E402  (the same runner and batch as the throughput benchmark)

from electra_bench import presets  # noqa: E402


def ab(name: str, objective: str, batch_size: int | None, steps: int, repeats: int, backend: str):
    p = presets.resolve(name, presets.Overrides(batch_size=batch_size))
    dev = torch.device("cpu")
    batch = bench_train.packed_batch(p.schedule.batch_size, p.schedule.seq_len, p.model.encoder.vocab_size, dev)
    eager = bench_train.build_ours(p, objective, batch, dev, False)
    compiled = bench_train.build_ours(p, objective, batch, dev, False, compile=backend)
    t = time.perf_counter()
    compiled.step(0)
    compile_s = time.perf_counter() - t
    for i in range(1, 3):
        eager.step(i)
        compiled.step(i)
    times, _ = bench_train.alternating_windows({"eager": eager.step, "compiled": compiled.step}, steps, repeats, 3,
                                               dev)
    e, c = statistics.median(times["eager"]) / steps, statistics.median(times["compiled"]) / steps
    return p, e, c, compile_s


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--presets", nargs="+", default=["tiny"], choices=presets.names())
    ap.add_argument("--objectives", nargs="+", default=["mlm", "rtd"], choices=["mlm", "rtd"])
    ap.add_argument("--batch-size", type=int, default=None)
    ap.add_argument("--steps", type=int, default=None, help="steps per window (default: 20 tiny, 2 otherwise)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--backend", default="inductor")
    args = ap.parse_args(argv)
    print(f"# load average {[round(x, 2) for x in os.getloadavg()]}; threads {torch.get_num_threads()}; "
          f"torch {torch.__version__}; backend {args.backend}")
    print("| preset | objective | batch x seq | eager tok/s | compiled tok/s | compiled / eager | first (compiling) step |")
    print("|---|---|---|---|---|---|---|")
    for name in args.presets:
        for objective in args.objectives:
            steps = args.steps or (20 if name == "tiny" else 2)
            p, e, c, compile_s = ab(name, objective, args.batch_size, steps, args.repeats, args.backend)
            tok = p.schedule.batch_size * p.schedule.seq_len
            print(f"| {name} | {objective} | {p.schedule.batch_size}x{p.schedule.seq_len} | {tok / e:,.0f} | {tok / c:,.0f} "
                  f"| {e / c:.2f}x | {compile_s:.0f} s |", flush=True)
    print(f"# load average {[round(x, 2) for x in os.getloadavg()]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
