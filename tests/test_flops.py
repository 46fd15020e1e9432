"""FLOP accounting: the paper convention reproduces the official numbers; the measured convention
agrees with torch's FlopCounterMode and refuses to undercount silently."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from electra_bench import objectives, presets, special_tokens
from electra_bench.errors import BenchError
from electra_bench.choices import FLOP_CONVENTIONS as CONVENTIONS
from electra_bench.flops import StepFlops, inference_flops, measured, paper, step_flops

# ---------------------------------------------------------------- paper convention


def _train_flops(preset, objective):
    return step_flops(preset, objective, "paper").flops_per_step * preset.schedule.steps[objective]


OFFICIAL = [  # flops_computation.py's MODEL_FLOPS (google-research/electra)
    ("bert_small", "small", "mlm", {}, 1.4187e18),
    ("bert_base", "base", "mlm", {}, 6.4283e19),
    ("electra_small (generator hidden 64)", "small", "rtd", {}, 1.2937e18),
    ("electra_base", "base", "rtd", {}, 6.4245e19),
    ("electra_small, generator hidden 128 (Table 1's 1.4e18)", "small", "rtd", {"generator_size": 128}, 1.4241e18),
]


@pytest.mark.parametrize("label,name,objective,changes,expected", OFFICIAL, ids=[o[0] for o in OFFICIAL])
def test_paper_reproduces_official_train_flops(label, name, objective, changes, expected):
    preset = presets.get(name).with_knobs(**changes)
    assert _train_flops(preset, objective) == pytest.approx(expected, rel=5e-3)


def test_paper_preset_shapes_match_the_script():
    small = presets.get("small")
    assert small.model.generator.hidden_size == 64 and small.schedule.steps == {"rtd": 1_000_000, "mlm": 1_450_000}
    assert small.with_knobs(generator_size=128).model.generator.hidden_size == 128
    assert presets.get("base").model.generator.hidden_size == 256


def test_paper_table1_small_is_generator_128_not_64():
    small = presets.get("small")
    g64 = _train_flops(small, "rtd")
    g128 = _train_flops(small.with_knobs(generator_size=128), "rtd")
    assert f"{g128:.1e}" == "1.4e+18" and f"{g64:.1e}" == "1.3e+18"


def test_paper_inference_electra_small():
    assert inference_flops(presets.get("small")) == pytest.approx(3.68e9, rel=5e-3)


def test_paper_step_structure():
    p = presets.get("small")
    mlm, rtd = step_flops(p, "mlm", "paper"), step_flops(p, "rtd", "paper")
    assert isinstance(mlm, StepFlops) and mlm.convention == "paper"
    for s in (mlm, rtd):
        assert s.flops_per_step == pytest.approx(2 * s.forward_flops)  # the paper: backward = forward
        assert sum(s.breakdown.values()) == pytest.approx(s.flops_per_step)
    assert set(rtd.breakdown) == {"generator", "discriminator"} and set(mlm.breakdown) == {"encoder"}
    # per-token formula: a step is batch x seq_len tokens
    per_token = paper.paper_flops_per_token(p.model.encoder, p.schedule.seq_len, "mlm")
    assert mlm.forward_flops == pytest.approx(p.schedule.batch_size * p.schedule.seq_len * per_token)
    # batch scales linearly
    double = step_flops(p.with_knobs(batch_size=2 * p.schedule.batch_size), "rtd", "paper")
    assert double.flops_per_step == pytest.approx(2 * rtd.flops_per_step)


def test_paper_formula_terms():
    cfg = presets.get("small").model.encoder
    block = paper.block_flops_per_token(cfg, 128)
    assert block["kqv"] == 6 * 256 * 256 and block["attention_scores"] == 2 * 256 * 128
    emb = paper.input_embedding_flops_per_token(cfg, 128)
    assert emb["word_lookup"] == 2 * 128 * 30522 and emb["projection"] == 2 * 128 * 256
    # no projection when E == H
    assert "projection" not in paper.input_embedding_flops_per_token(presets.get("base").model.encoder, 512)
    head = paper.mlm_head_flops_per_token(cfg)
    assert head["logits"] == pytest.approx(0.15625 * 2 * 128 * 30522)


# ---------------------------------------------------------------- API and errors


def test_conventions_and_errors():
    assert CONVENTIONS == ("measured", "paper")
    p = presets.get("tiny")
    with pytest.raises(BenchError) as e:
        step_flops(p, "mlm", "bogus")
    assert "bogus" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(BenchError):
        step_flops(p, "clm", "paper")
    with pytest.raises(BenchError):
        inference_flops(p, "bogus")


def test_step_flops_is_cached_and_copies_breakdown():
    p = presets.get("tiny")
    a = step_flops(p, "rtd")
    a.breakdown.clear()
    b = step_flops(p, "rtd")
    assert b.breakdown and b.flops_per_step == a.flops_per_step


# ---------------------------------------------------------------- measured convention

TINY = presets.get("tiny")
# factorised embeddings (E != H, so the E->H projection runs), one-head generator, short sequences
FACTORISED = TINY.with_knobs(vocab_size=2000, embedding_size=64, hidden_size=128, num_layers=1, seq_len=48)


def _flop_counter_train(preset, objective, batch):
    """FlopCounterMode on a real forward + backward in training mode (dropout > 0, so CPU SDPA
    takes the math path and is counted)."""
    torch.manual_seed(0)
    module = objectives.build(objective, preset, special_tokens.DEFAULT).train()
    ids, seg, att = measured.packed_batch(batch, preset.schedule.seq_len, preset.model.encoder.vocab_size, special_tokens.DEFAULT)
    counter = FlopCounterMode(display=False)
    with counter:
        result = module({"input_ids": ids, "segment_ids": seg, "attention_mask": att}, torch.Generator().manual_seed(0))
        result.loss.backward()
    return counter.get_total_flops()


@pytest.mark.parametrize("objective", ["mlm", "rtd"])
@pytest.mark.parametrize("preset", [TINY, FACTORISED], ids=["tiny", "factorised"])
def test_measured_matches_flop_counter_mode(preset, objective):
    # dropout > 0 for the reference: with dropout 0 CPU SDPA takes a fused kernel FlopCounterMode misses
    enc = dataclasses.replace(preset.model.encoder, dropout=max(preset.model.encoder.dropout, 0.1))
    p = preset.with_knobs(batch_size=2, encoder=enc)
    measured_train = step_flops(p, objective, "measured").flops_per_step
    reference = _flop_counter_train(p, objective, 2)
    assert measured_train == pytest.approx(reference, rel=0.02)


def test_measured_six_times_macs_and_linear_in_batch():
    one = measured.objective_count(TINY, "rtd", batch=1)
    two = measured.objective_count(TINY, "rtd", batch=2)
    assert two.units == pytest.approx(2 * one.units, rel=1e-6)  # per-sample linear: scaling is exact
    s = step_flops(TINY, "rtd")
    assert s.convention == "measured"
    assert s.forward_flops == pytest.approx(2 * TINY.schedule.batch_size * one.units, rel=1e-6)
    assert s.flops_per_step == pytest.approx(3 * s.forward_flops)
    assert sum(s.breakdown.values()) == pytest.approx(s.flops_per_step)


def test_measured_counts_sdpa_exactly():
    p = TINY
    count = measured.objective_count(p, "mlm", batch=1)
    cfg = p.model.encoder
    T, A, D = p.schedule.seq_len, cfg.num_heads, cfg.head_dim
    scores = cfg.num_layers * A * T * T
    assert count.by_operator["scaled_dot_product_attention"] == pytest.approx(scores * 2 * D + scores / 2)


def test_measured_real_presets_have_nothing_unaccounted():
    for objective in ("mlm", "rtd"):
        count = measured.objective_count(FACTORISED, objective, batch=1)
        assert count.unaccounted == {}  # every op in the step is counted or known to be free
        for op in ("linear", "scaled_dot_product_attention", "layer_norm", "dropout", "gelu"):
            assert count.by_operator.get(op, 0) > 0, op


def test_measured_inference_tiny():
    per_seq_forward = step_flops(TINY, "mlm").forward_flops / TINY.schedule.batch_size
    infer = inference_flops(TINY, "measured")
    assert 0.3 * per_seq_forward < infer < per_seq_forward  # no MLM head, no masking


# ---------------------------------------------------------------- failing loudly


class _HiddenHeavyOp(nn.Module):
    """A small matmul followed by an op no handle counts (cumsum) on a much bigger tensor."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        y = self.proj(x)  # (N, 8): 64 MACs per row
        return torch.cumsum(y.repeat(1, 64), dim=-1)  # (N, 512): ~4x the linear's units


class _Opaque(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x @ x.t()

    @staticmethod
    def backward(ctx, g):
        return g


class _HiddenPythonOp(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        return _Opaque.apply(self.proj(x))


def test_unaccounted_heavy_op_raises():
    with pytest.raises(measured.UnaccountedFlopsError, match="aten::cumsum"):
        measured.count_forward(_HiddenHeavyOp(), (torch.randn(4, 8),))
    assert issubclass(measured.UnaccountedFlopsError, BenchError)


def test_opaque_python_op_raises():
    with pytest.raises(measured.UnaccountedFlopsError, match="opaque"):
        measured.count_forward(_HiddenPythonOp(), (torch.randn(4, 8),))


def test_check_unaccounted_threshold():
    total = 1_000_000.0
    # free ops are ignored whatever their size; small unknown ops are returned, not raised
    left = measured.check_unaccounted(total, {"aten::gather": 1e9, "aten::erf": 999.0, "prim::Constant": 5.0})
    assert left == {"aten::erf": 999.0}
    with pytest.raises(measured.UnaccountedFlopsError, match=r"aten::erf \(~0\.11%"):
        measured.check_unaccounted(total, {"aten::erf": 1100.0})


def test_fvcore_silent_ignores_are_counted():
    """fvcore ignores dropout/masked_fill/clamp/relu silently; our handles count them."""

    class M(nn.Module):
        def forward(self, x):
            return torch.relu(torch.nn.functional.dropout(x, 0.1, training=True)).clamp(max=1.0)

    count = measured.count_forward(M(), (torch.randn(10, 100),))
    assert count.by_operator["dropout"] == pytest.approx(500) and count.by_operator["relu"] == pytest.approx(500)
    assert count.by_operator["clamp"] == pytest.approx(500)
