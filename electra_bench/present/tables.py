"""Rich tables of what the engine commands report (presets, flops, signal, one checkpoint's scores);
the --json forms are the dicts themselves.

Types in those dicts: every FLOP count (per step, per schedule, per sequence, each `breakdown` entry) is
a float, whatever the counting code returned (the paper convention's arithmetic gives ints for some
parts), so a JSON reader sees one type per field; counts of things (batch size, sequence length, steps,
hidden sizes, parameters) are ints.
"""

from __future__ import annotations

from typing import Any, Mapping

from rich.table import Table

from .. import presets
from ..choices import OBJECTIVES
from ..flops import inference_flops, step_flops
from ..objectives import parameter_counts


def preset_rows(names: list[str], convention: str) -> list[dict]:
    rows = []
    for name in names:
        p = presets.get(name)
        e = p.model.encoder
        row = {
            "name": name,
            "source": p.source,
            "description": p.description,
            "layers": e.num_layers, "hidden": e.hidden_size, "heads": e.num_heads, "ffn": e.ffn_size,
            "embedding": e.embedding_size, "vocab": e.vocab_size,
            "generator_hidden": p.for_objective("rtd").model.generator.hidden_size,
            "seq_len": p.schedule.seq_len, "batch_size": p.schedule.batch_size, "lr": p.optim.lr,
            "mask_prob": p.objective.mask_prob,
            "steps": dict(p.schedule.steps),
            "params": parameter_counts(p),
            "convention": convention,
            "flops_per_step": {o: step_flops(p.for_objective(o), o, convention).flops_per_step
                               for o in OBJECTIVES},
        }
        row["train_flops"] = {o: row["flops_per_step"][o] * p.schedule.steps[o] for o in OBJECTIVES}
        rows.append(row)
    return rows


def presets_table(rows: list[dict]) -> Table:
    t = Table(title=f"presets (FLOPs: {rows[0]['convention']} convention)" if rows else "presets")
    for col in ("name", "shape L/H/A/FFN/E", "vocab", "gen H", "seq x batch", "params enc / rtd",
                "FLOPs/step mlm", "FLOPs/step rtd", "full schedule mlm / rtd", "source"):
        t.add_column(col, justify="left" if col in ("name", "source") else "right")
    for r in rows:
        t.add_row(
            r["name"], f"{r['layers']}/{r['hidden']}/{r['heads']}/{r['ffn']}/{r['embedding']}", str(r["vocab"]),
            str(r["generator_hidden"]), f"{r['seq_len']} x {r['batch_size']}",
            f"{r['params']['encoder']/1e6:.1f}M / {r['params']['rtd_total']/1e6:.1f}M",
            f"{r['flops_per_step']['mlm']:.3g}", f"{r['flops_per_step']['rtd']:.3g}",
            f"{r['train_flops']['mlm']:.3g} / {r['train_flops']['rtd']:.3g}", r["source"],
        )
    return t


def _cell(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def key_value_table(title: str, d: Mapping[str, Any]) -> Table:
    """One row per key; a nested mapping becomes indented rows under its key."""
    t = Table(title=title, show_header=False)
    t.add_column("key")
    t.add_column("value", justify="right")
    for k, v in d.items():
        if isinstance(v, Mapping):
            t.add_row(k, "")
            for sub, w in v.items():
                t.add_row(f"  {sub}", _cell(w))
        else:
            t.add_row(k, _cell(v))
    return t


def flops_report(p: presets.RunConfig, objective: str, convention: str) -> dict:
    """What `electra-bench flops` reports for a preset resolved for `objective` (FLOP counts as floats,
    see the module docstring). `breakdown`: training FLOPs of one step by part (by operator in the
    measured convention; encoder, or generator and discriminator, in the paper's), summing to
    `flops_per_step`."""
    sf = step_flops(p, objective, convention)
    steps = int(p.schedule.full_steps(objective))
    return {
        "preset": p.name, "objective": objective, "convention": convention,
        "batch_size": int(p.schedule.batch_size), "seq_len": int(p.schedule.seq_len),
        "generator_hidden": int(p.model.generator.hidden_size),
        "flops_per_step": float(sf.flops_per_step), "forward_flops_per_step": float(sf.forward_flops),
        "steps": steps, "train_flops": float(sf.flops_per_step) * steps,
        "inference_flops_per_sequence": float(inference_flops(p, convention)),
        "breakdown": {part: float(v) for part, v in sf.breakdown.items()},
    }


def flops_table(result: Mapping[str, Any], min_share: float = 0.005) -> Table:
    """flops_report as a table: the scalars, then the breakdown largest part first with its share of
    `flops_per_step`; parts under `min_share` of it are summed into one "other" row (--json has them all)."""
    t = key_value_table(f"{result['objective']} {result['preset']} ({result['convention']} convention)",
                        {k: v for k, v in result.items() if k != "breakdown"})
    parts = sorted(result.get("breakdown", {}).items(), key=lambda kv: -kv[1])
    if not parts:
        return t
    total = result["flops_per_step"]
    small = [(k, v) for k, v in parts if total and v < min_share * total]
    if len(small) > 1:
        parts = [kv for kv in parts if kv not in small] + [(f"other ({len(small)} parts)", sum(v for _, v in small))]
    unit = "operator" if result["convention"] == "measured" else "model"
    t.add_section()
    t.add_row(f"training FLOPs per step by {unit}", f"sum {sum(result['breakdown'].values()):.4g}")
    for part, v in parts:
        share = f" ({100 * v / total:.1f}%)" if total else ""
        t.add_row(f"  {part}", f"{v:.4g}{share}")
    return t


def checkpoint_table(result: dict) -> Table:
    flops = result.get("train_flops")
    what = (f"{result['objective']} at {flops:.3g} FLOPs" if flops is not None
            else f"{result['checkpoint']} (external, training FLOPs unknown)")
    t = Table(title=f"{what} ({result['protocol']}, {result['seeds']} seeds: median [min, max])")
    for c in ("task", "metric", "median", "spread"):
        t.add_column(c, justify="right" if c in ("median", "spread") else "left")
    for r in result["results"]:
        t.add_row(r["task"], r["metric"], f"{r['median']:.2f}", f"[{r['min']:.2f}, {r['max']:.2f}]")
    return t
