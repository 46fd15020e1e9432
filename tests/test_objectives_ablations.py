"""The ELECTRA paper's efficiency ablations (Table 5) as objectives on the same encoder: each one's
defining property, checked so that the test fails when the property is lost."""

import dataclasses

import pytest
import torch

from electra_bench import objectives, presets
from electra_bench.choices import ABLATION_OBJECTIVES, ALL_OBJECTIVES, OBJECTIVES, SCORED_OBJECTIVES
from electra_bench.model import Encoder
from electra_bench.objectives import ObjectiveResult
from electra_bench.special_tokens import DEFAULT as SP

from batches import random_batch

V = 300


def _preset(**kw):
    p = presets.get("tiny")
    enc = dataclasses.replace(p.model.encoder, num_layers=1, vocab_size=kw.pop("vocab_size", V))
    return p.with_knobs(encoder=enc, **{"seq_len": 32, "batch_size": 8, **kw})


def _batch(B=8, T=32, vocab=V, seed=0):
    return random_batch(B, T, vocab, seed)


def _build(objective, seed=0, **kw):
    torch.manual_seed(seed)
    return objectives.build(objective, _preset(**kw), SP)


def _run(m, batch, seed=4):
    torch.manual_seed(3)  # dropout
    return m(batch, torch.Generator().manual_seed(seed))


def test_choices_keep_compare_to_mlm_and_rtd():
    assert OBJECTIVES == ("mlm", "rtd")
    assert ABLATION_OBJECTIVES == ("rtd-15", "replace-mlm", "alltokens-mlm")
    assert ALL_OBJECTIVES == OBJECTIVES + ABLATION_OBJECTIVES
    assert SCORED_OBJECTIVES == ("init",) + ALL_OBJECTIVES


@pytest.mark.parametrize("objective", ABLATION_OBJECTIVES)
def test_every_ablation_is_a_full_objective_on_the_initial_encoder(objective):
    m = _build(objective, seed=7)
    assert isinstance(m.backbone(), Encoder)
    # the kept encoder is constructed first: it is the 'untrained' point every objective starts from
    init = objectives.initial_encoder(_preset().model.encoder, 7).state_dict()
    kept = m.backbone().state_dict()
    assert kept.keys() == init.keys() and all(torch.equal(kept[k], init[k]) for k in init)
    m.init_output_priors(torch.log_softmax(torch.randn(V), 0))
    r = _run(m, _batch())
    assert isinstance(r, ObjectiveResult) and r.loss.ndim == 0 and torch.isfinite(r.loss)
    assert r.loss.requires_grad and all(not v.requires_grad for v in r.metrics.values())
    for k in ("mlm_logits", "mlm_labels", "mlm_weights"):  # what the learning diagnostics read
        assert k in r.extras
    assert r.extras["mlm_logits"].shape[:2] == r.extras["mlm_labels"].shape


# ---------------------------------------------------------------- ELECTRA 15%


def test_rtd15_is_rtd_with_the_loss_on_masked_positions_only():
    """Same weights and same draws as rtd under one seed; only the positions that carry loss differ."""
    rtd, r15 = _build("rtd"), _build("rtd-15")
    a, b = rtd.state_dict(), r15.state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    batch = _batch()
    x, y = _run(rtd, batch).extras, _run(r15, batch).extras
    assert torch.equal(x["replaced"], y["replaced"]) and torch.equal(x["disc_logits"], y["disc_logits"])
    masked = y["token_mask"]
    assert masked.sum() == y["mlm_weights"].sum() < 0.2 * masked.numel()
    bce = torch.nn.functional.binary_cross_entropy_with_logits(x["disc_logits"], x["replaced"], reduction="none")
    r = _run(r15, batch)
    assert r.metrics["disc_loss"] == pytest.approx(float((bce * masked).sum() / masked.sum()), rel=1e-6)


def _loss_with_disc_logits_shifted(m, batch, where):
    """The loss when the discriminator's logits are moved by +3 at the positions `where` selects."""
    handle = m.disc_head.register_forward_hook(lambda mod, args, out: out + 3.0 * where)
    try:
        return float(_run(m, batch).loss.detach())
    finally:
        handle.remove()


@pytest.mark.parametrize("objective", ["rtd", "rtd-15"])
def test_rtd15_loss_ignores_unmasked_positions(objective):
    m = _build(objective)
    batch = _batch()
    masked = _run(_build("rtd-15"), batch).extras["token_mask"]  # the same draws for both objectives
    base = float(_run(m, batch).loss.detach())
    at_unmasked = _loss_with_disc_logits_shifted(m, batch, 1.0 - masked)
    at_masked = _loss_with_disc_logits_shifted(m, batch, masked)
    assert at_masked != base
    if objective == "rtd-15":
        assert at_unmasked == base  # exactly: those positions carry no loss
    else:
        assert at_unmasked != base  # rtd learns from every position


# ---------------------------------------------------------------- Replace MLM


def _model_inputs(m, batch):
    seen = []
    handle = m.encoder.register_forward_pre_hook(lambda mod, args: seen.append(args[0].clone()))
    try:
        r = _run(m, batch)
    finally:
        handle.remove()
    return seen[0], r


@pytest.mark.parametrize("objective", ["replace-mlm", "alltokens-mlm"])
def test_replace_mlm_input_holds_generator_samples_never_mask(objective):
    m = _build(objective)
    with torch.no_grad():  # a generator that would put [MASK] everywhere if it were allowed to
        m.gen_head.bias[SP.mask] = 1e4
    batch = _batch()
    seen, r = _model_inputs(m, batch)
    assert not (seen == SP.mask).any()
    # only the masked positions changed (choose_positions draws first: rtd-15 shows where), and an
    # untrained generator rarely samples the original there
    masked = _run(_build("rtd-15"), batch).extras["token_mask"].bool()
    changed = seen != batch["input_ids"]
    assert not (changed & ~masked).any() and changed.sum() > 0.8 * masked.sum()


def test_replace_mlm_learns_from_masked_positions_only():
    m = _build("replace-mlm")
    batch = _batch()
    r = _run(m, batch)
    assert r.extras["mlm_logits"].shape[1] == _preset().max_predictions  # the head runs at the masked slots
    r.loss.backward()
    assert m.head.transform.weight.grad.abs().sum() > 0 and m.gen_head.transform.weight.grad.abs().sum() > 0


# ---------------------------------------------------------------- All-Tokens MLM


def test_alltokens_copy_probability_one_puts_all_mass_on_the_input_token():
    m = _build("alltokens-mlm")
    batch = _batch()
    ids = batch["input_ids"]
    with torch.no_grad():
        m.copy_head.weight.zero_()
        m.copy_head.bias.fill_(50.0)  # D = sigmoid(50) = 1 in float32
        logits, copy_logit = m.outputs(ids, batch["segment_ids"], batch["attention_mask"])
        probs = m.log_distribution(logits, copy_logit, ids).exp()  # (B, T, V)
    assert torch.allclose(probs.gather(-1, ids[..., None]), torch.ones(1), atol=1e-6)
    assert torch.allclose(probs.sum(-1), torch.ones(1), atol=1e-5)
    # D = 0: the MLM softmax alone; D in between: a normalised mixture, D more on the input token
    for bias, expected in ((-50.0, torch.softmax(logits, -1)), (0.0, None)):
        with torch.no_grad():
            m.copy_head.bias.fill_(bias)
            p = m.log_distribution(logits, m.outputs(ids, batch["segment_ids"], batch["attention_mask"])[1], ids).exp()
        assert torch.allclose(p.sum(-1), torch.ones(1), atol=1e-5)
        if expected is not None:
            assert torch.allclose(p, expected, atol=1e-6)
        else:
            soft = torch.softmax(logits, -1).gather(-1, ids[..., None])
            assert torch.allclose(p.gather(-1, ids[..., None]), 0.5 + 0.5 * soft, atol=1e-6)


def test_alltokens_loss_is_every_real_token_under_the_mixture_and_reaches_the_copy_head():
    m = _build("alltokens-mlm")
    batch = _batch()
    seen, r = _model_inputs(m, batch)
    with torch.no_grad():
        logits, copy_logit = m.outputs(seen, batch["segment_ids"], batch["attention_mask"])
        logp = m.log_distribution(logits, copy_logit, seen)
        expected = -logp.gather(-1, batch["input_ids"][..., None]).mean()
    assert float(r.metrics["mlm_loss"]) == pytest.approx(float(expected), rel=1e-5)
    assert float(r.loss.detach()) == pytest.approx(float(r.metrics["gen_loss"] + r.metrics["mlm_loss"]), rel=1e-6)
    r.loss.backward()
    assert m.copy_head.weight.grad.abs().sum() > 0 and m.copy_head.bias.grad.abs() > 0
    assert m.head.transform.weight.grad.abs().sum() > 0
    # the mixture's argmax accuracy, computed cheaply in the step, is the full distribution's
    hit = (logp.argmax(-1) == batch["input_ids"]).float().mean()
    assert float(r.metrics["mlm_acc"]) == pytest.approx(float(hit), abs=1e-6)


# ---------------------------------------------------------------- FLOPs, both conventions


def test_paper_flops_of_the_ablations_follow_the_formula():
    from electra_bench.flops import paper, step_flops

    p = presets.get("small")
    f = {o: step_flops(p, o, "paper") for o in ALL_OBJECTIVES}
    tokens = p.schedule.batch_size * p.schedule.seq_len
    # ELECTRA 15% computes what ELECTRA computes: only which positions carry loss differs
    assert f["rtd-15"].flops_per_step == f["rtd"].flops_per_step
    # Replace MLM: RTD's generator plus a BERT model
    assert f["replace-mlm"].breakdown == {"generator": f["rtd"].breakdown["generator"],
                                          "encoder": f["mlm"].breakdown["encoder"]}
    # All-Tokens MLM: the MLM head at every position instead of 15.625%, plus the copy head
    head = sum(paper.mlm_head_flops_per_token(p.model.encoder, 1.0).values())
    copy = 2 * p.model.encoder.hidden_size + 1 + 4 + 1 + 3 * p.model.encoder.vocab_size
    extra = 2 * tokens * ((1 - paper.OUTPUT_FRAC) * head + copy)
    assert f["alltokens-mlm"].flops_per_step == pytest.approx(f["replace-mlm"].flops_per_step + extra, rel=1e-12)
    assert f["alltokens-mlm"].breakdown["copy_head"] == pytest.approx(2 * tokens * copy)
    order = sorted(ALL_OBJECTIVES, key=lambda o: f[o].flops_per_step)
    assert order == ["mlm", "rtd", "rtd-15", "replace-mlm", "alltokens-mlm"]
    for s in f.values():
        assert sum(s.breakdown.values()) == pytest.approx(s.flops_per_step)


def test_measured_flops_of_the_ablations_count_everything_and_order_like_the_paper():
    from electra_bench.flops import measured, step_flops

    p = _preset(batch_size=2)
    f = {o: step_flops(p, o, "measured").flops_per_step for o in ALL_OBJECTIVES}
    assert f["rtd-15"] == pytest.approx(f["rtd"], rel=1e-3)  # the same modules; only the loss weights differ
    # Replace MLM = a generator + an MLM model; All-Tokens MLM adds the head at every position (how rtd
    # ranks among them depends on V: at V = 300 its every-position binary head outweighs the MLM head)
    assert f["mlm"] < f["replace-mlm"] < f["alltokens-mlm"] and f["mlm"] < f["rtd"]
    for o in ABLATION_OBJECTIVES:
        assert measured.objective_count(p, o, batch=1).unaccounted == {}


@pytest.mark.parametrize("objective", ABLATION_OBJECTIVES)
def test_measured_ablation_flops_match_flop_counter_mode(objective):
    from torch.utils.flop_counter import FlopCounterMode

    from electra_bench.flops import measured, step_flops

    p = _preset(batch_size=2)
    p = p.with_knobs(dropout=0.1)  # CPU SDPA's math path
    torch.manual_seed(0)
    m = objectives.build(objective, p, SP).train()
    ids, seg, att = measured.packed_batch(2, p.schedule.seq_len, V, SP)
    counter = FlopCounterMode(display=False)
    with counter:
        m({"input_ids": ids, "segment_ids": seg, "attention_mask": att}, torch.Generator().manual_seed(0)).loss.backward()
    assert step_flops(p, objective, "measured").flops_per_step == pytest.approx(counter.get_total_flops(), rel=0.03)


def _cli(*args):
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "electra_bench.cli", *args], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_flops_command_takes_every_objective():
    import json

    from electra_bench.flops import step_flops

    out = json.loads(_cli("flops", "--preset", "small", "--objective", "alltokens-mlm", "--convention", "paper", "--json"))
    p = presets.get("small")
    assert out["objective"] == "alltokens-mlm" and out["steps"] == p.schedule.full_steps("alltokens-mlm") == p.schedule.steps["rtd"]
    assert out["flops_per_step"] == step_flops(p, "alltokens-mlm", "paper").flops_per_step
    assert set(out["breakdown"]) == {"generator", "encoder", "copy_head"}
