"""Rich tables of what the engine commands report (presets, flops, signal, one checkpoint's scores);
the --json forms are the dicts themselves."""

from __future__ import annotations

from rich.table import Table

from .. import presets
from ..choices import OBJECTIVES
from ..flops import step_flops
from ..objectives import parameter_counts


def preset_rows(names: list[str], convention: str) -> list[dict]:
    rows = []
    for name in names:
        p = presets.get(name)
        e = p.encoder
        row = {
            "name": name,
            "source": p.source,
            "description": p.description,
            "layers": e.num_layers, "hidden": e.hidden_size, "heads": e.num_heads, "ffn": e.ffn_size,
            "embedding": e.embedding_size, "vocab": e.vocab_size,
            "generator_hidden": p.for_objective("rtd").generator.hidden_size,
            "seq_len": p.seq_len, "batch_size": p.batch_size, "lr": p.lr, "mask_prob": p.mask_prob,
            "steps": dict(p.steps),
            "params": parameter_counts(p),
            "convention": convention,
            "flops_per_step": {o: step_flops(p.for_objective(o), o, convention).flops_per_step
                               for o in OBJECTIVES},
        }
        row["train_flops"] = {o: row["flops_per_step"][o] * p.steps[o] for o in OBJECTIVES}
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


def key_value_table(title: str, d: dict) -> Table:
    t = Table(title=title, show_header=False)
    t.add_column("key")
    t.add_column("value", justify="right")
    for k, v in d.items():
        t.add_row(k, f"{v:.4g}" if isinstance(v, float) else str(v))
    return t


def checkpoint_table(result: dict) -> Table:
    t = Table(title=f"{result['objective']} at {result['train_flops']:.3g} FLOPs ({result['protocol']}, "
                    f"{result['seeds']} seeds: median [min, max])")
    for c in ("task", "metric", "median", "spread"):
        t.add_column(c, justify="right" if c in ("median", "spread") else "left")
    for r in result["results"]:
        t.add_row(r["task"], r["metric"], f"{r['median']:.2f}", f"[{r['min']:.2f}, {r['max']:.2f}]")
    return t
