"""scripts/gpu_check.sh: its CPU dry run runs the real commands end to end (so the GPU check cannot rot
unnoticed), and its loss-parity verdict catches a difference."""

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _module():
    spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "scripts" / "gpu_check.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


gc = _module()
LOSSES = {1: 10.0, 2: 9.5, 3: 9.0, 4: 8.6}


def test_parity_passes_within_tolerance():
    low = {s: v * 1.005 for s, v in LOSSES.items()}
    r = gc.compare_losses(low, LOSSES, 4, 0.02)
    assert r["ok"] and r["compared_steps"] == 4 and r["max_rel_diff"] == pytest.approx(0.005)


def test_parity_failure_is_detected():
    low = {**LOSSES, 3: 9.0 * 1.05}
    r = gc.compare_losses(low, LOSSES, 4, 0.02)
    assert not r["ok"] and r["worst_step"] == 3 and r["max_rel_diff"] == pytest.approx(0.05)
    assert "step 3" in r["verdict"]


def test_parity_fails_on_missing_steps_and_non_finite_losses():
    r = gc.compare_losses({1: 10.0, 2: 9.5}, LOSSES, 4, 0.02)
    assert not r["ok"] and "missing" in r["verdict"]
    r = gc.compare_losses({**LOSSES, 2: math.nan}, LOSSES, 4, 0.02)
    assert not r["ok"] and "non-finite" in r["verdict"]
    r = gc.compare_losses({}, {}, 4, 0.02)
    assert not r["ok"]


def test_loss_rows_skip_diagnostics_only_rows(tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_text('{"step": 0, "diag/mlm_loss": 6.3}\n{"step": 1, "loss": 7.5}\n{"step": 2, "loss": 7.25}\n')
    assert gc.loss_rows(log) == {1: 7.5, 2: 7.25}


def _numbers(obj, where=""):
    """Every number in a JSON tree, with its path."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _numbers(v, f"{where}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _numbers(v, f"{where}[{i}]")
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        yield where, obj


@pytest.mark.slow
def test_dry_run_writes_every_section(tmp_path):
    out = tmp_path / "gpu_check"
    env = {**os.environ, "PYTHON": sys.executable, "PYTHONPATH": os.pathsep.join(
        [str(ROOT)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))}
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_check.sh"), "--dry-run", "--out", str(out),
                           "--append-docs", str(tmp_path / "perf.md")],
                          capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    res = json.loads((out / "gpu_check.json").read_text())
    assert res["ok"] and res["config"]["dry_run"]
    for where, x in _numbers(res):
        assert math.isfinite(x), where
    assert res["environment"]["peak_flops"] > 0
    assert [s["name"] for s in res["steps"]] == ["environment", "speed eager tiny 8x32", "parity", "interop",
                                                 "distributed", "compare graph", "speed compiled tiny 8x32",
                                                 "speed cudagraphs tiny 8x32"]
    assert all(s["status"] == "ok" and s["wall_s"] > 0 for s in res["steps"][:-1])
    assert res["steps"][-1]["status"] == "skipped: CUDA graphs need a CUDA device"
    modes = {(r["objective"], r["mode"]) for r in res["speed"]}
    assert modes == {(o, m) for o in ("mlm", "rtd") for m in ("eager", "compiled (aot_eager)")}
    for r in res["speed"]:
        for k in ("tokens_per_s", "mfu", "step_s", "first_step_s", "hf_tokens_per_s", "ours_over_hf"):
            assert r[k] > 0, (k, r)
        assert r["ours_over_hf"] == pytest.approx(r["tokens_per_s"] / r["hf_tokens_per_s"])
        assert r["peak_memory_bytes"] is None  # CPU: not measured, and said so
    appended = (tmp_path / "perf.md").read_text()  # --append-docs: the speed table under a dated heading
    assert "### GPU check speed section" in appended and "| tiny | rtd | eager | 8x32 |" in appended
    assert {r["objective"] for r in res["parity"]} == {"mlm", "rtd"}
    for r in res["parity"]:
        assert r["ok"] and r["compared_steps"] == res["config"]["parity_compare"]
        assert 0 <= r["max_rel_diff"] <= r["tolerance"] and r["precision"] == "bf16"
        assert r["steps"] == res["config"]["parity_steps"]
    io = res["interop"]  # parity's RTD checkpoint exported and compared with transformers (CPU: fp32 tight)
    assert io["fp32"]["disc_hidden"] < 1e-5 and io["fp32"]["gen_logits"] < 1e-5 and "bf16" in io
    assert "## Interop" in (out / "gpu_check.md").read_text()
    d = res["distributed"]
    assert d["status"] == "ok" and d["world_size"] == 2 and math.isfinite(d["final_loss"])
    g = res["compare_graph"]  # through the job graph on 2 CPU workers: every run trained, every score stored
    assert g["status"] == "ok" and g["pretrain_runs"] == 2 and g["scores"] > 0 and g["utilisation"] == {}
    assert g["parallelism"]["jobs"] == 2
    md = (out / "gpu_check.md").read_text()
    for heading in ("## Environment", "## Speed", "## Loss parity", "## Distributed", "## Compare graph",
                    "## Steps"):
        assert heading in md
    assert md.count("|---|") >= 5 and "CPU DRY RUN" in md


def test_a_command_over_its_cap_or_failing_is_recorded_not_raised():
    s = gc.Step("slow", 1.5)
    assert gc.run_cmd([sys.executable, "-c", "import time; time.sleep(30)"], s, 1.5) is None
    assert s.status.startswith("timeout") and not s.ok
    s = gc.Step("bad", 30)
    assert gc.run_cmd([sys.executable, "-c", "raise SystemExit('broken thing')"], s, 30) is None
    assert s.status.startswith("failed (exit 1)") and "broken thing" in s.status
    s = gc.Step("good", 30)
    assert gc.run_cmd([sys.executable, "-c", "print(42)"], s, 30).stdout.strip() == "42" and s.ok
