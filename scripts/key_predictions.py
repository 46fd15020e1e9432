#!/usr/bin/env python
"""Name an older run's prediction files by the reading they belong to.

Runs stored before 2026-12-07 kept one `predictions/<objective>/seed-<k>/frac-<F>/<task>.npz` per encoder and
task, whichever reading wrote it last; a run scored under two readings of the same task (`--protocol
probe,finetune-tuned`) kept only the later's, so the earlier reading's statistics fell back to seeds-only.
This gives each unkeyed file the name `<task>@<protocol>.npz` of the one reading whose score rows it
reproduces (every evaluation seed's metric to 1e-6) and leaves the rest, saying why. Reading older runs
needs none of this (an unkeyed file is read and checked against the rows); it is for a run whose lost
predictions are put back from a copy taken before they were overwritten.

    python scripts/key_predictions.py RUN_DIR [--dry-run]
"""
from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from electra_bench.errors import BenchError
from electra_bench.store.runs import load_run, open_run
from electra_bench.summarise.bootstrap_inputs import name_unkeyed_predictions


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", help="a run directory")
    ap.add_argument("--dry-run", action="store_true", help="say what would be renamed, rename nothing")
    args = ap.parse_args(argv)
    try:
        root = Path(args.run)
        with open_run(root.parent, root.name, load_run(root).config, create=False) as run:  # its lock held
            done = name_unkeyed_predictions(run, dry_run=args.dry_run)
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for rel, what in done:
        if what.startswith("left"):
            print(f"{rel}: {what}")
    counts = Counter(what.split(":")[0] if what.startswith("left") else what.rsplit("@", 1)[-1][:-4]
                     for _, what in done)
    print(f"{len(done)} unkeyed file(s): " + (", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
