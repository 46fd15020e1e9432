"""Histories of CI records for the history tests: copies of the committed quick run's record under
made-up commits, some with a broken objective (what a regression looks like) or another config."""

import copy
import hashlib
from pathlib import Path

from electra_bench.ci import history_store

from electra_bench.store import runs as results

ROOT = Path(__file__).resolve().parents[1]
FIXTURE_RUN = ROOT / "tests" / "fixtures" / "runs" / "compare-tiny-quick-dcf2017d"
BASELINE = ROOT / "results" / "baselines" / "compare-quick.json"


def fixture_record() -> dict:
    return history_store.record_from_run(results.load_run(FIXTURE_RUN), cwd=ROOT, environ={})


def sha(i: int) -> str:
    return hashlib.sha1(str(i).encode()).hexdigest()


def break_mlm(rec: dict) -> dict:
    """MLM stopped learning: gain over unigram near 0 and the score 3 points down."""
    m = rec["metrics"]
    m["mlm/diag/mlm_gain_nats"] = 0.01
    m["mlm/score"] -= 3.0
    m["mlm/margin"] -= 3.0
    rec["bands"]["mlm"]["pretrain_seeds"] = [m["mlm/score"] - 0.4, m["mlm/score"] + 0.4]
    return rec


def other_config(rec: dict) -> dict:
    rec["config"] = {**rec["config"], "budget": "4e12"}
    rec["config_digest"] = history_store.config_digest(rec["config"])
    return rec


def history(base: dict, n: int, *, broken=(), other=(), timed=True) -> list[dict]:
    """n records in store order: commit i is sha(i); `broken` and `other` are indices."""
    out = []
    for i in range(n):
        rec = copy.deepcopy(base)
        rec.update(commit=sha(i), parent=sha(i - 1) if i else None, date=f"2026-12-{1 + i % 28:02d}T10:00:00+00:00",
                   run_id=f"ci-{i}")
        if i in broken:
            break_mlm(rec)
        if i in other:
            other_config(rec)
        if timed:
            rec["timings"] = {"wall_s": 240.0 + 5 * (i % 3), "prepare_s": 5.0, "pretrain_s": 150.0 + i % 4,
                              "evaluate_s": 80.0}
        rec["run_key"] = history_store.run_key(rec["commit"], rec["run_id"], None, rec["metrics"])
        out.append(rec)
    return out
