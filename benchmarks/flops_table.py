"""Print, as markdown, paper vs measured FLOPs per step and total pre-training FLOPs per preset.

    python benchmarks/flops_table.py                  # tiny mini small base large
    python benchmarks/flops_table.py tiny small       # a subset

The measured column traces every model once on CPU (large: ~10 s and ~2.5 GB of memory).
Used to fill docs/flops.md.
"""

from __future__ import annotations

import sys
import time

from electra_bench import presets
from electra_bench.choices import OBJECTIVES
from electra_bench.flops import inference_flops, step_flops

DEFAULT = ["tiny", "mini", "small", "base", "large"]


def _row(name: str, objective: str, gen: str, p, steps: int, paper: float, measured: float) -> str:
    return (
        f"| {name} | {objective} | {gen} | {p.schedule.batch_size}x{p.schedule.seq_len} | {steps:,} | {paper:.4g} | {measured:.4g} "
        f"| {measured / paper:.3f} | {paper * steps:.4g} | {measured * steps:.4g} |"
    )


def main(names: list[str]) -> None:
    rows, infer_rows = [], []
    t0 = time.time()
    for name in names:
        base = presets.get(name)
        for objective in OBJECTIVES:
            p = base.for_objective(objective)  # tiny: MLM masks 25%, RTD's generator is 1/2 wide
            steps = p.schedule.steps[objective]
            pap, mea = step_flops(p, objective, "paper"), step_flops(p, objective, "measured")
            gen = f"{p.model.generator.hidden_size}" if objective == "rtd" else "-"
            rows.append(_row(name, objective, gen, p, steps, pap.flops_per_step, mea.flops_per_step))
        ip, im = inference_flops(base, "paper"), inference_flops(base, "measured")
        infer_rows.append(f"| {name} | {base.schedule.seq_len} | {ip:.4g} | {im:.4g} | {im / ip:.3f} |")
    if "small" in names:  # the paper's Table 1 ELECTRA-Small (generator hidden 128)
        p = presets.get("small").with_knobs(generator_size=128)
        pap, mea = step_flops(p, "rtd", "paper"), step_flops(p, "rtd", "measured")
        rows.append(_row("small (generator_size=128)", "rtd", "128", p, p.schedule.steps["rtd"], pap.flops_per_step,
                         mea.flops_per_step))
    print("| preset | objective | gen. hidden | batch x seq | steps | paper FLOPs/step | measured FLOPs/step "
          "| measured/paper | paper train FLOPs | measured train FLOPs |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    print()
    print("| preset | seq | paper inference FLOPs | measured inference FLOPs | measured/paper |")
    print("|---|---|---|---|---|")
    print("\n".join(infer_rows))
    print(f"\n({time.time() - t0:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:] or DEFAULT)
