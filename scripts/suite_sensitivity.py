#!/usr/bin/env python
"""Which candidate tasks hear pre-training: the sensitivity table of docs/suite.md, read from compare runs.

For every task of each run given, at the run's final checkpoint and for each objective: trained - untrained
(the run's own Multi-Bootstrap statement, summary.json -> protocols -> statistics -> vs_untrained -> per_task),
its 95% CI, and the sensitivity z = (trained - untrained) / its standard error. A task separates when some
objective's CI excludes 0 above it.

    python scripts/suite_sensitivity.py RUN[:LABEL] ... [--mdl FILE[:LABEL]] [--md] [--json FILE]

The runs must be scored on the candidates build of ebs-3 (scripts/build_suite.py --suite ebs-3 --candidates),
e.g. the default budget and 1.2e14; a run read several ways (`--protocol probe,zeroshot`) gives a column per
reading ("RUN, zeroshot": its minimal-pair tasks, each objective's own head against the untrained encoder's).
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
    several = len(summary["protocols"]) > 1  # a run read several ways: a column per reading
    for protocol, block in summary["protocols"].items():
        stats = block.get("statistics") or {}
        column = f"{label}, {protocol}" if several else label
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
                out.append({"run": column, "protocol": protocol, "objective": v["objective"], "task": task,
                            "kind": kinds.get(task), "train_flops": v["train_flops"],
                            "untrained": init["per_task"][task]["estimate"] if init else None,
                            "difference": s["estimate"], "ci": s["ci"], "se": se,
                            "z": s["estimate"] / se if se > 0 else None,
                            "separates": s["ci"][0] > 0,
                            "n_pretrain_seeds": stats.get("n_pretrain_seeds", {}).get(
                                f"{v['objective']}@{final:.4f}")})
    return out


def rows_of_mdl(path: Path, label: str) -> list[dict]:
    """The same rows from scripts/mdl_probe.py's JSON: the saving in millibits an example (untrained - trained
    codelength; positive: the trained encoder's features transmit the labels in fewer bits)."""
    result = json.loads(path.read_text(encoding="utf-8"))
    return [{"run": label, "protocol": "mdl", "objective": r["objective"], "task": r["task"], "kind": None,
             "untrained": r["untrained_bits"] * 1000, "difference": r["saving_bits"] * 1000,
             "ci": [c * 1000 for c in r["ci"]], "se": r["se"] * 1000, "z": r["z"], "separates": r["separates"]}
            for r in result["rows"]]


def table(rows: list[dict], md: bool) -> str:
    """One row per task, one column per measurement: "M +d (z), R +d (z)", `*` where that objective's CI
    lies above 0."""
    runs = list(dict.fromkeys(r["run"] for r in rows))
    tasks = list(dict.fromkeys(r["task"] for r in rows))
    head = ["task", "kind"] + runs
    lines = []
    for t in tasks:
        cells = [t, next((r["kind"] for r in rows if r["task"] == t and r["kind"]), "-") or "-"]
        for run in runs:
            mine = {r["objective"]: r for r in rows if r["task"] == t and r["run"] == run}
            parts = []
            for o, letter in (("mlm", "M"), ("rtd", "R")):
                r = mine.get(o)
                if r is not None:
                    z = f"{r['z']:+.1f}" if r["z"] is not None else "n/a"
                    parts.append(f"{letter} {r['difference']:+.1f} ({z})" + ("*" if r["separates"] else ""))
            cells.append(", ".join(parts) or "-")
        lines.append(cells)
    separated = {run: sum(any(r["separates"] for r in rows if r["task"] == t and r["run"] == run) for t in tasks)
                 for run in runs}
    lines.append(["tasks separated", ""] + [str(separated[run]) for run in runs])
    if md:
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out += ["| " + " | ".join(c) + " |" for c in lines]
        return "\n".join(out)
    return "\n".join(["\t".join(head)] + ["\t".join(c) for c in lines])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", help="RUN_DIR[:LABEL]")
    ap.add_argument("--mdl", action="append", default=[], help="FILE[:LABEL]: scripts/mdl_probe.py's JSON")
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
    for spec in args.mdl:
        path, _, label = spec.partition(":")
        rows += rows_of_mdl(Path(path), label or Path(path).stem)
    print(table(rows, args.md))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
