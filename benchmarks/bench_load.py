"""How pre-training slows down next to a competing process, per thread/wait setting.

Runs the same small pre-training (`pretrain --preset tiny --objective mlm --budget 1e12`, ~60 steps)
for each setting, alone and next to `yes > /dev/null` (one busy core of the two), and prints wall times,
the slowdown ratio under load, and whether the final weights are identical to the first setting's
(a setting must not change results). Settings are environment variables set before torch loads.

    python benchmarks/bench_load.py                 # all settings, idle and loaded
    python benchmarks/bench_load.py --budget 5e11   # shorter

Timings swing with the machine's load: the script prints the load average before each run.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SETTINGS = {  # electra_bench sets OMP_WAIT_POLICY=PASSIVE unless the environment says otherwise
    "OMP_WAIT_POLICY=ACTIVE (spin: torch's own default)": {"OMP_WAIT_POLICY": "ACTIVE"},
    "default (OMP_WAIT_POLICY=PASSIVE)": {},
    "1 thread (OMP_NUM_THREADS=1)": {"OMP_NUM_THREADS": "1"},
}


def run_once(env_extra: dict, budget: str, out: Path) -> float:
    env = {**os.environ, **env_extra}
    cmd = [sys.executable, "-m", "electra_bench", "pretrain", "--preset", "tiny", "--objective", "mlm",
           "--budget", budget, "--out", str(out), "--quiet", "--peak-flops", "1e11"]
    t = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def weights_digest(out: Path) -> str:
    return hashlib.sha256((out / "checkpoints" / "frac-1.0000" / "model.safetensors").read_bytes()).hexdigest()[:12]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--budget", default="1e12")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        # warm the data cache so no run pays for tokenizing
        run_once({}, "1e10", Path(tmp) / "warm")
        for name, env in SETTINGS.items():
            times, digests = {}, set()
            for loaded in (False, True):
                out = Path(tmp) / f"{len(rows)}-{loaded}"
                load_avg = os.getloadavg()[0]
                hog = subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) if loaded else None
                try:
                    times[loaded] = run_once(env, args.budget, out)
                finally:
                    if hog:
                        hog.kill()
                        hog.wait()
                digests.add(weights_digest(out))
                print(f"{name:52s} {'with yes' if loaded else 'alone':8s} {times[loaded]:6.1f} s "
                      f"(load average before: {load_avg:.2f})", file=sys.stderr)
            rows.append((name, times[False], times[True], digests))
    first = next(iter(rows[0][3]))
    print(f"\n| setting | alone (s) | next to `yes` (s) | slowdown | weights same as the first row |")
    print("|---|---|---|---|---|")
    for name, alone, loaded, digests in rows:
        print(f"| {name} | {alone:.1f} | {loaded:.1f} | {loaded / alone:.2f}x | "
              f"{'yes' if digests == {first} else 'no: ' + ', '.join(sorted(digests))} |")
    print(f"\ncores: {os.cpu_count()}; budget {args.budget}")


if __name__ == "__main__":
    main()
