"""Provenance: the fields are there, the hostname is not, non-git directories are 'unknown'."""

import json
import socket

import pytest

from electra_bench.errors import BenchError
from electra_bench.store import provenance


def test_collect_fields_without_hostname():
    rec = provenance.collect({"pretrain": 1, "finetune": [0, 1]}, "paper", {"corpus": "ab12", "tokenizer": "cd34"},
                             extra={"note": "x"})
    for key in ("git", "versions", "hardware", "torch", "seeds", "flop_convention", "data_hashes", "command_line",
                "created_utc"):
        assert key in rec
    assert rec["flop_convention"] == "paper" and rec["seeds"]["pretrain"] == 1
    assert {"python", "torch", "numpy", "pandas", "sklearn", "tokenizers", "fvcore", "electra_bench"} <= set(rec["versions"])
    assert rec["versions"]["electra_bench"]
    assert rec["hardware"]["cpu_count"] >= 1 and "gpu_count" in rec["hardware"]
    text = json.dumps(rec)
    host = socket.gethostname()
    assert "hostname" not in text and "node" not in rec["hardware"]
    if len(host) >= 6:
        assert host not in text


def test_git_state_outside_a_checkout(tmp_path):
    assert provenance.git_state(tmp_path) == {"commit": "unknown", "dirty": "unknown"}


def test_unknown_convention():
    with pytest.raises(BenchError):
        provenance.collect({}, "guess", {})
