"""How fast the command line refuses bad arguments, from a cold start (a new Python process each time).

Every refusal below needs no model: a budget, a preset, a path, a reference's syntax, --checkpoints. Each
command runs `--runs` times as `python -m electra_bench ...` in an empty directory (nothing it could create
is kept), and the table shows its exit status, the first line it printed on stderr, and min / median / max
wall seconds. The target (issue 33): under 2 s each on 2 cores. "Cold" means a fresh interpreter; the OS
file cache is warm after the first run, as it is for a user typing commands.

    python benchmarks/bench_refusal.py                      # this checkout, 5 runs each
    python benchmarks/bench_refusal.py --root /tmp/old-checkout --runs 3   # another checkout, to compare
    python benchmarks/bench_refusal.py --json refusals.json

The load average is printed before and after: timings on a shared machine swing with it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# (name, arguments, a word the error line must hold): each must exit non-zero with one `error:` line
REFUSALS = [
    ("absurd budget (pretrain)", ["pretrain", "--objective", "mlm", "--budget", "1e21"], "allow-long-schedule"),
    ("malformed budget (pretrain)", ["pretrain", "--objective", "mlm", "--budget", "1e15x"], "malformed budget"),
    ("unknown preset (pretrain)", ["pretrain", "--preset", "nope", "--objective", "mlm", "--budget", "1e15"],
     "preset"),
    ("bad --checkpoints (pretrain)", ["pretrain", "--objective", "mlm", "--budget", "1e12", "--checkpoints", "0.5"],
     "checkpoints"),
    ("missing --corpus (pretrain)", ["pretrain", "--objective", "mlm", "--budget", "1e12", "--corpus",
                                     "/nonexistent/corpus.txt"], "nonexistent"),
    ("absurd budget (compare)", ["compare", "--budget", "1e21"], "allow-long-schedule"),
    ("budget missing with --preset (compare)", ["compare", "--preset", "small"], "--budget"),
    ("bad --reference (compare)", ["compare", "--quick", "--reference", "no-label-here"], "reference"),
    ("missing checkpoint (finetune)", ["finetune", "/nonexistent/ckpt"], "nonexistent"),
    ("missing source (export)", ["export", "/nonexistent/ckpt", "--out", "exported"], "nonexistent"),
    ("missing run (report)", ["report", "/nonexistent/run"], "nonexistent"),
    ("missing run (check)", ["check", "/nonexistent/run", "--baseline", str(ROOT / "results" / "baselines" /
                                                                             "compare-quick.json")], "nonexistent"),
]


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def run_once(root: Path, args: list[str], cwd: Path) -> tuple[float, int, str]:
    env = {**os.environ, "PYTHONPATH": str(root), "ELECTRA_BENCH_CACHE": str(cwd / "cache")}
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "electra_bench", *args], cwd=cwd, env=env, capture_output=True,
                       text=True, timeout=300)
    wall = time.perf_counter() - t
    first = next((line for line in r.stderr.splitlines() if line.strip()), "")
    return wall, r.returncode, first


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=ROOT, help="the checkout to measure (put first on PYTHONPATH)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", default=None, help="comma-separated substrings of the refusals' names")
    ap.add_argument("--json", dest="json_out", default=None, help="also write the results here")
    a = ap.parse_args()
    chosen = [r for r in REFUSALS if not a.only or any(s in r[0] for s in a.only.split(","))]
    print(f"checkout {a.root}; {a.runs} run(s) each; load average before: {loadavg()}", file=sys.stderr)
    rows = []
    for name, args, word in chosen:
        walls, codes, line = [], set(), ""
        with tempfile.TemporaryDirectory() as tmp:
            for _ in range(a.runs):
                wall, rc, line = run_once(a.root.resolve(), args, Path(tmp))
                walls.append(wall)
                codes.add(rc)
        ok = codes != {0} and line.startswith("error:") and word.lower() in line.lower()
        rows.append({"name": name, "command": "electra-bench " + " ".join(args), "exit_codes": sorted(codes),
                     "refused_as_expected": ok, "error": line[:160], "min_s": min(walls),
                     "median_s": statistics.median(walls), "max_s": max(walls), "runs": walls})
    print("| refusal | exit | min s | median s | max s | as expected | first stderr line |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['name']} | {','.join(map(str, r['exit_codes']))} | {r['min_s']:.2f} | {r['median_s']:.2f} | "
              f"{r['max_s']:.2f} | {'yes' if r['refused_as_expected'] else 'NO'} | {r['error'][:90]} |")
    print(f"load average after: {loadavg()}", file=sys.stderr)
    if a.json_out:
        Path(a.json_out).write_text(json.dumps({"root": str(a.root), "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
