"""This checkout's training step against another checkout's, in one process, windows alternating.

    git worktree add /tmp/before <commit>        # or: git archive <commit> | tar -x -C /tmp/before
    python benchmarks/bench_versions.py --other /tmp/before
    python benchmarks/bench_versions.py --other /tmp/before --presets small --batch-size 8 --threads 1

Separate processes (bench_train.py run twice) are compared across minutes of a machine's load, which on a
shared 2-core machine moves a step's time by 20% or more; here both versions' steps run in one process, on
the same batch, in alternating windows (other, this, other, ...), so drift hits both alike. The other
checkout's package is imported under another name (it has no absolute self-imports). Each side runs its own
`training.step.train_step`, optimizer, lr schedule and objective (MLM, RTD), seeded as the trainer seeds a
step; the non-finite flag is read once per window, as the trainer reads it at log steps. Reports tokens/s
of each and this / other (median of --repeats windows). A benchmark, printed; not a timed test.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_train  # noqa: E402  (the packed batch of the throughput benchmark)

import electra_bench  # noqa: E402

OTHER = "electra_bench_other"


def load_other(checkout: Path):
    """The other checkout's `electra_bench`, imported as `electra_bench_other`."""
    init = checkout / "electra_bench" / "__init__.py"
    if not init.is_file():
        raise SystemExit(f"--other {checkout}: no electra_bench/__init__.py there")
    spec = importlib.util.spec_from_file_location(OTHER, init, submodule_search_locations=[str(init.parent)])
    mod = importlib.util.module_from_spec(spec)
    sys.modules[OTHER] = mod
    spec.loader.exec_module(mod)
    return mod


def _import(pkg_name: str, module: str):
    """`module` of the package: under pretrain/, or training/ in a checkout before the stage folders."""
    try:
        return importlib.import_module(f"{pkg_name}.pretrain.{module}")
    except ModuleNotFoundError:
        return importlib.import_module(f"{pkg_name}.training.{module}")


def _part(config, section: str):
    """A section of the config tree; a checkout before the tree has one flat preset, its own section."""
    return getattr(config, section, config)


def stepper(pkg_name: str, preset_name: str, objective: str, batch_size: int | None, seq_len: int | None):
    """(step(i), check(), (batch, seq_len)): package `pkg_name`'s model, optimizer and training step on
    bench_train's batch."""
    presets = importlib.import_module(f"{pkg_name}.presets")
    objectives = importlib.import_module(f"{pkg_name}.objectives")
    special = importlib.import_module(f"{pkg_name}.special_tokens").DEFAULT
    optim, step_mod, trainer = (_import(pkg_name, m) for m in ("optim", "step", "trainer"))
    ov = {k: v for k, v in (("batch_size", batch_size), ("seq_len", seq_len)) if v is not None}
    p = presets.resolve(preset_name, presets.Overrides(**ov)).for_objective(objective)
    s, o = _part(p, "schedule"), _part(p, "optim")
    dev = torch.device("cpu")
    torch.manual_seed(0)
    model = objectives.build(objective, p, special).to(dev)
    opt = optim.pretraining_optimizer(model, o, dev)
    clip = [q for g in opt.param_groups for q in g["params"]]
    batch = bench_train.packed_batch(s.batch_size, s.seq_len, _part(p, "model").encoder.vocab_size, dev)
    bad = torch.zeros((), dtype=torch.bool)

    def step(i: int) -> None:
        nonlocal bad
        model.train()
        optim.set_lr(opt, optim.lr_at(i, 10_000, o.lr, s.warmup_fraction))
        seed = trainer.step_seed(0, i, 0)
        torch.manual_seed(seed)
        rng = torch.Generator(device=dev).manual_seed(seed)
        r = step_mod.train_step(lambda b, g: model(b, g, padded=False), opt, batch, rng, clip, o.grad_clip, "cpu",
                                False)
        bad = bad | ~torch.isfinite(r.loss.detach())

    def check() -> None:
        if bool(bad):
            raise RuntimeError(f"{pkg_name}: non-finite loss")

    return step, check, (s.batch_size, s.seq_len)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--other", required=True, type=Path, help="the other checkout (its root directory)")
    ap.add_argument("--presets", nargs="+", default=["tiny"])
    ap.add_argument("--objectives", nargs="+", default=["mlm", "rtd"])
    ap.add_argument("--batch-size", type=int, default=None)
    ap.add_argument("--seq-len", type=int, default=None)
    ap.add_argument("--steps", type=int, default=None, help="steps per window (default: 10 tiny, 2 otherwise)")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    load_other(args.other.resolve())
    print(f"# bench_versions: this {Path(electra_bench.__file__).parent.parent} vs other {args.other}; "
          f"threads {torch.get_num_threads()}; torch {torch.__version__}; load average "
          f"{[round(x, 2) for x in os.getloadavg()]}")
    print("| preset | objective | batch x seq | other tok/s | this tok/s | this / other | windows |")
    print("|---|---|---|---|---|---|---|")
    for name in args.presets:
        for objective in args.objectives:
            sides = {who: stepper(pkg, name, objective, args.batch_size, args.seq_len)
                     for who, pkg in (("other", OTHER), ("this", "electra_bench"))}
            n = args.steps or (10 if name == "tiny" else 2)
            for step, _, _ in sides.values():
                for i in range(args.warmup):
                    step(i)
            times = {who: [] for who in sides}
            i = args.warmup
            for _ in range(args.repeats):
                for who, (step, check, _) in sides.items():
                    t = time.perf_counter()
                    for j in range(i, i + n):
                        step(j)
                    check()
                    times[who].append(time.perf_counter() - t)
                i += n
            B, T = sides["this"][2]
            tokens = B * T * n
            rate = {who: tokens / statistics.median(ts) for who, ts in times.items()}
            per = [f"{o / t:.2f}" for o, t in zip(times["other"], times["this"])]
            print(f"| {name} | {objective} | {B}x{T} | {rate['other']:,.0f} "
                  f"| {rate['this']:,.0f} | **{rate['this'] / rate['other']:.2f}x** | {' '.join(per)} |", flush=True)
    print(f"# load average at the end {[round(x, 2) for x in os.getloadavg()]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
