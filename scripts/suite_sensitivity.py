#!/usr/bin/env python
"""Which candidate tasks hear pre-training: the sensitivity table of docs/suite.md, read from compare runs.

For every task of each run given, at the run's final checkpoint and for each objective: trained - untrained
(the run's own Multi-Bootstrap statement, summary.json -> protocols -> statistics -> vs_untrained -> per_task),
its 95% CI, and the sensitivity z = (trained - untrained) / its standard error. A task separates when some
objective's CI excludes 0 above it.

    python scripts/suite_sensitivity.py RUN[:LABEL] ... [--md] [--json FILE]

The runs must be scored on the candidates build of ebs-3 (scripts/build_suite.py --suite ebs-3 --candidates)
with the same protocol, e.g. the default budget (2 pre-training seeds) and 1.2e14.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def rows_of(run: Path, label: str) -> list[dict]:
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    out = []
    kinds = summary["suite"].get("kinds", {})
    for protocol, block in summary["protocols"].items():
        stats = block.get("statistics") or {}
        vs = stats.get("vs_untrained", [])
        if not vs:
            continue
        final = max(v["fraction"] for v in vs)
        init = next((p for p in stats.get("points", []) if p["objective"] == "init"), None)
        for v in vs:
            if abs(v["fraction"] - final) > 1e-9 or "per_task" not in v:
                continue
            for task, s in v["per_task"].items():
                se = s.get("se") or 0.0
                out.append({"run": label, "protocol": protocol, "objective": v["objective"], "task": task,
                            "kind": kinds.get(task), "train_flops": v["train_flops"],
                            "untrained": init["per_task"][task]["estimate"] if init else None,
                            "difference": s["estimate"], "ci": s["ci"], "se": se,
                            "z": s["estimate"] / se if se > 0 else None,
                            "separates": s["ci"][0] > 0,
                            "n_pretrain_seeds": stats.get("n_pretrain_seeds", {}).get(
                                f"{v['objective']}@{final:.4f}")})
    return out


def table(rows: list[dict], md: bool) -> str:
    runs = list(dict.fromkeys(r["run"] for r in rows))
    tasks = list(dict.fromkeys(r["task"] for r in rows))
    head = ["task", "kind"] + [f"{run}: untrained, MLM - u (z), RTD - u (z)" for run in runs]
    lines = []
    for t in tasks:
        cells = [t, next((r["kind"] for r in rows if r["task"] == t and r["kind"]), "-") or "-"]
        for run in runs:
            mine = {r["objective"]: r for r in rows if r["task"] == t and r["run"] == run}
            if not mine:
                cells.append("-")
                continue
            u = next(iter(mine.values()))["untrained"]
            parts = [f"{u:.1f}" if u is not None else "?"]
            for o in ("mlm", "rtd"):
                r = mine.get(o)
                if r is None:
                    parts.append("-")
                    continue
                z = f"{r['z']:+.1f}" if r["z"] is not None else "n/a"
                parts.append(f"{r['difference']:+.1f} [{r['ci'][0]:+.1f}, {r['ci'][1]:+.1f}] (z {z})"
                             + (" *" if r["separates"] else ""))
            cells.append(", ".join(parts))
        lines.append(cells)
    if md:
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out += ["| " + " | ".join(c) + " |" for c in lines]
        return "\n".join(out)
    return "\n".join(["\t".join(head)] + ["\t".join(c) for c in lines])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", help="RUN_DIR[:LABEL]")
    ap.add_argument("--md", action="store_true", help="a Markdown table (docs/suite.md)")
    ap.add_argument("--json", dest="json_out", default=None, help="also write every row here")
    args = ap.parse_args(argv)
    rows = []
    for spec in args.runs:
        path, _, label = spec.partition(":")
        run = Path(path)
        if not (run / "summary.json").is_file():
            print(f"error: {run / 'summary.json'}: missing (a finished compare run?)", file=sys.stderr)
            return 2
        rows += rows_of(run, label or run.name)
    print(table(rows, args.md))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
