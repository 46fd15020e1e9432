"""Whole-run cost of the main job and of evaluation, on this machine (prints figures and ratios).

- wall time and peak RSS of `electra-bench compare --quick` and (with --full) of the default
  `electra-bench compare`, each in a fresh results directory (a subprocess, so RSS is its own);
- evaluation throughput: probe feature extraction (examples/s) and full fine-tuning (examples/s, the
  paper's recipe) of the tiny encoder on one suite task (rt-polarity).

    python benchmarks/bench_compare.py [--full] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time


def run_compare(extra: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as root:
        t = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "electra_bench.cli", "compare", "--results", root, "--json",
                               *extra], capture_output=True, text=True)
        wall = time.perf_counter() - t
        if proc.returncode:
            raise SystemExit(proc.stderr[-2000:])
        summary = json.loads(proc.stdout)
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # the largest child so far
    return {"wall_s": wall, "peak_rss_mib_max_so_far": peak_kib / 1024, "timings": summary.get("timings", {})}


def eval_throughput() -> dict:
    import torch

    from electra_bench import presets
    from electra_bench.pretrain import run as runner
    from electra_bench.data.task_sources import load_tasks
    from electra_bench.score.finetune import Recipe, features, finetune
    from electra_bench.model import Encoder

    p = presets.resolve("tiny")
    data, p = runner.prepare_data(p, None, None, 0, quiet=True)
    task = load_tasks(None, ["rt-polarity"])[0]
    torch.manual_seed(0)
    enc = Encoder(p.model.encoder)
    examples = task.splits["train"][:2000]
    t = time.perf_counter()
    features(enc, data.tokenizer, examples, p.schedule.seq_len, torch.device("cpu"))
    probe_eps = len(examples) / (time.perf_counter() - t)
    sub = type(task)(task.spec, {"train": task.splits["train"][:512], "dev": task.splits["dev"][:256]}, task.source)
    recipe = Recipe(protocol="finetune", max_len=p.schedule.seq_len, epochs=1)
    t = time.perf_counter()
    finetune(enc.state_dict(), p.model.encoder, sub, data.tokenizer, recipe, 0, torch.device("cpu"))
    ft_eps = (512 + 256) / (time.perf_counter() - t)
    return {"probe_features_examples_per_s": probe_eps, "finetune_examples_per_s": ft_eps,
            "probe_over_finetune": probe_eps / ft_eps}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--full", action="store_true", help="also time the default run (minutes)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    out = {"eval": eval_throughput(), "quick": run_compare(["--quick"])}
    if args.full:
        out["default"] = run_compare([])
    e = out["eval"]
    print(f"evaluation (tiny encoder, rt-polarity, fp32): probe features {e['probe_features_examples_per_s']:.0f} ex/s, "
          f"full fine-tuning {e['finetune_examples_per_s']:.0f} ex/s (train+dev), ratio {e['probe_over_finetune']:.1f}x")
    for k in ("quick", "default"):
        if k in out:
            r = out[k]
            print(f"compare {k:<7}: wall {r['wall_s']:.0f} s, peak RSS {r['peak_rss_mib_max_so_far']:.0f} MiB, "
                  + ", ".join(f"{n} {v:.0f} s" for n, v in sorted(r["timings"].items())))
    if "default" in out:
        print(f"default / quick wall time: {out['default']['wall_s'] / out['quick']['wall_s']:.1f}x "
              f"(limits: 15 min and 3 min on 2 cores)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
