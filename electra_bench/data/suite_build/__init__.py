"""The embedded suites' build (ebs-2, ebs-3): `build.build` is the one entry, which scripts/build_suite.py
calls with its command line's arguments. Build-time only: nothing in the package imports it at run time, and
it reads its sources with `rdata` (R data files), which the package never needs. Each part is importable on
its own, so tests build a task from a small fixture; the modules: docs/suite.md, "Rebuilding"."""
