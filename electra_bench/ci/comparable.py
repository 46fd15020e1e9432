"""What makes two runs comparable for the regression check and the history (regression.py, history_*.py):
the config a run records for it, and where a run's differs from a baseline's, one phrase per field."""

from __future__ import annotations

import math
from typing import Any, Mapping


# what makes two runs comparable: (key, what the one-line message calls it); config keys of compare's
# CompareSpec, and what the summary itself says (protocol, suite, FLOP convention, tasks, seeds)
CONFIG_KEYS = {
    "preset": "preset", "overrides": "preset overrides", "budget": "budget", "protocol": "protocol",
    "suite": "suite", "flop_convention": "FLOP convention", "tasks": "tasks", "seeds": "evaluation seeds",
    "pretrain_seeds": "pre-training seeds", "probe_pool": "probe pool", "probe_examples": "probe examples",
    "max_eval_examples": "max eval examples", "corpus": "corpus", "source": "task source",
}
_FROM_RUN_CONFIG = ("preset", "overrides", "budget", "probe_pool", "probe_examples", "max_eval_examples", "corpus",
                    "source")


def run_config(summary: Mapping[str, Any], protocol: str | None = None) -> dict[str, Any]:
    """What makes this run comparable with another (CONFIG_KEYS): the run config's keys when it has them
    (a key the config lacks is left out: unknown, not compared), and from the summary the protocol, the
    suite, the FLOP convention, the tasks, the evaluation seeds and the number of pre-training seeds
    scored under `protocol` (default: the main one)."""
    protocol = protocol or summary["main_protocol"]
    cfg = summary.get("config") if isinstance(summary.get("config"), Mapping) else {}
    out: dict[str, Any] = {}
    for key in _FROM_RUN_CONFIG:
        if key in cfg:
            value = cfg[key]
            if key == "preset" and isinstance(value, Mapping):
                value = value.get("name")
            out[key] = value
    out["protocol"] = cfg.get("protocol", summary["main_protocol"])
    out["suite"] = summary.get("suite", {}).get("name")
    out["flop_convention"] = summary.get("flop_convention")
    block = summary["protocols"].get(protocol)
    if block is not None:
        out["tasks"] = sorted(block["tasks"])
        out["seeds"] = sorted({int(s) for p in block["points"] for s in p["seeds"]})
        out["pretrain_seeds"] = max((int(p["score"].get("n_pretrain_seeds", 1)) for p in block["points"]), default=1)
    return out


def _same(key: str, a: Any, b: Any) -> bool:
    if key == "budget":
        try:
            x, y = float(a), float(b)
        except (TypeError, ValueError):
            return str(a).strip() == str(b).strip()
        return math.isclose(x, y, rel_tol=1e-9)
    if key == "tasks" and isinstance(a, list) and isinstance(b, list):
        return sorted(a) == sorted(b)
    return a == b


def _show(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(str(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}={v}" for k, v in sorted(value.items())) + "}" if value else "none"
    return "none" if value is None else str(value)


def config_differences(run_cfg: Mapping[str, Any], baseline_cfg: Mapping[str, Any]) -> list[str]:
    """One phrase per comparable field both record and that differs: "budget 1.2e13 (run) vs 2e12 (baseline)";
    tasks name what only one side has."""
    out = []
    for key, name in CONFIG_KEYS.items():
        if key not in run_cfg or key not in baseline_cfg or _same(key, run_cfg[key], baseline_cfg[key]):
            continue
        a, b = run_cfg[key], baseline_cfg[key]
        if key == "tasks" and isinstance(a, list) and isinstance(b, list):
            parts = []
            if sorted(set(a) - set(b)):
                parts.append(f"only the run has {', '.join(sorted(set(a) - set(b)))}")
            if sorted(set(b) - set(a)):
                parts.append(f"only the baseline has {', '.join(sorted(set(b) - set(a)))}")
            out.append(f"tasks ({'; '.join(parts)})")
        else:
            out.append(f"{name} {_show(a)} (run) vs {_show(b)} (baseline)")
    return out
