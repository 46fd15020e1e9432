"""benchmarks/bench_train.py's profile mode, on a toy shape: categories cover the whole profiled time."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_train", ROOT / "benchmarks" / "bench_train.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_train"] = mod  # its dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


def test_categories_name_the_kernels(bench):
    assert bench.categorise("aten::addmm") == "matmul"
    assert bench.categorise("aten::bernoulli_") == "dropout masks (bernoulli_, random_)"
    assert bench.categorise("aten::random_") == "dropout masks (bernoulli_, random_)"  # not sampling's rand
    assert bench.categorise("aten::uniform_") == "sampling and masking (rand, topk, gather, scatter, argmax)"
    assert bench.categorise("aten::_log_softmax") == "loss (cross-entropy, bce)"  # not attention's softmax
    assert bench.categorise("aten::_softmax") == "attention (sdpa)"
    assert bench.categorise("aten::_fused_adamw_") == "optimizer (adamw)"
    assert bench.categorise("aten::as_strided") == "other"


def test_profile_mode_reports_where_the_step_goes(bench, tmp_path, capsys):
    out = tmp_path / "r.json"
    rc = bench.main(["--presets", "tiny", "--objectives", "rtd", "--no-hf", "--no-memory", "--repeats", "1",
                     "--steps", "1", "--warmup", "1", "--batch-size", "2", "--seq-len", "16", "--peak-n", "64",
                     "--profile", "2", "--json", str(out)])
    assert rc == 0
    prof = json.loads(out.read_text())["results"][0]["profile"]["ours"]
    shares = {c: f for c, _, f in prof["categories"]}
    assert sum(shares.values()) == pytest.approx(1.0)
    assert shares["matmul"] > 0 and prof["steps"] == 2
    assert all(c > 0 for _, _, _, c in prof["top_ops"])  # calls per step
    text = capsys.readouterr().out
    assert "### profile: tiny rtd 2x16" in text and "| matmul |" in text and "ours: top ops by self time" in text
