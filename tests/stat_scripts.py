"""The simulation scripts (scripts/stat_designs.py, bootstrap_coverage.py, plan_check.py, sequential_sim.py)
as modules, for the tests that run them at a small size."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

import bootstrap_coverage  # noqa: E402,F401
import stat_designs  # noqa: E402,F401
