"""The flops report: one JSON type per field (FLOP counts floats, counts of things ints) and the
breakdown visible in the table."""

import io
import json

import pytest
from rich.console import Console

from electra_bench import presets
from electra_bench.present import tables

FLOP_KEYS = ("flops_per_step", "forward_flops_per_step", "train_flops", "inference_flops_per_sequence")
COUNT_KEYS = ("batch_size", "seq_len", "generator_hidden", "steps")


def render(table) -> str:
    console = Console(file=io.StringIO(), width=120, color_system=None)
    console.print(table)
    return console.file.getvalue()


@pytest.mark.parametrize("convention", ["paper", "measured"])
@pytest.mark.parametrize("objective", ["mlm", "rtd"])
def test_flops_report_types_and_breakdown(objective, convention):
    p = presets.get("tiny").for_objective(objective)
    r = json.loads(json.dumps(tables.flops_report(p, objective, convention)))  # what --json prints
    for k in FLOP_KEYS:
        assert isinstance(r[k], float), (k, r[k])
    for k in COUNT_KEYS:
        assert isinstance(r[k], int) and not isinstance(r[k], bool), (k, r[k])
    assert r["breakdown"] and all(isinstance(v, float) for v in r["breakdown"].values()), r["breakdown"]
    assert sum(r["breakdown"].values()) == pytest.approx(r["flops_per_step"], rel=1e-6)
    assert r["train_flops"] == pytest.approx(r["flops_per_step"] * r["steps"])
    if convention == "paper":
        assert set(r["breakdown"]) == ({"encoder"} if objective == "mlm" else {"generator", "discriminator"})

    text = render(tables.flops_table(r))
    assert "training FLOPs per step by" in text and "%)" in text
    big = [k for k, v in r["breakdown"].items() if v >= 0.005 * r["flops_per_step"]]
    assert big and all(part in text for part in big)
    if len(r["breakdown"]) > len(big) + 1:
        assert "other (" in text
    assert all(part in render(tables.flops_table(r, min_share=0)) for part in r["breakdown"])


def test_key_value_table_shows_nested_rows():
    text = render(tables.key_value_table("t", {"a": 1.5, "parts": {"x": 2.0, "y": 3}}))
    assert "parts" in text and "  x" in text and "1.5" in text
