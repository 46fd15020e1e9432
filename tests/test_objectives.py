import dataclasses

import pytest
import torch

from electra_bench import objectives, presets
from electra_bench.model import count_parameters
from electra_bench.objectives import choose_positions
from electra_bench.special_tokens import DEFAULT as SP


def _batch(B=64, T=64, V=1000, pad_from=None, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, V, (B, T), generator=g)
    ids[:, 0], ids[:, -1] = SP.cls, SP.sep
    att = torch.ones_like(ids)
    if pad_from is not None:
        ids[:, pad_from:] = SP.pad
        ids[:, pad_from - 1] = SP.sep
        att[:, pad_from:] = 0
    return {"input_ids": ids, "segment_ids": torch.zeros_like(ids), "attention_mask": att}


def test_positions_count_and_never_special():
    b = _batch(pad_from=40)
    pos, w = choose_positions(b["input_ids"], b["attention_mask"], SP, 0.15, 9, torch.Generator().manual_seed(1))
    assert pos.shape == (64, 9)
    real = 38  # 40 real positions minus [CLS] and [SEP]
    assert (w.sum(1) == round(0.15 * real)).all()
    chosen = torch.gather(b["input_ids"], 1, pos)[w > 0]
    assert not ((chosen == SP.cls) | (chosen == SP.sep) | (chosen == SP.pad)).any()
    for row, wr in zip(pos, w):  # without replacement
        picked = row[wr > 0].tolist()
        assert len(set(picked)) == len(picked)


def test_positions_are_uniform_over_candidates():
    b = _batch(B=2000, T=34)
    pos, w = choose_positions(b["input_ids"], b["attention_mask"], SP, 0.15, 5, torch.Generator().manual_seed(2))
    counts = torch.bincount(pos[w > 0], minlength=34).float()
    assert counts[0] == 0 and counts[-1] == 0
    inner = counts[1:-1]
    assert inner.std() / inner.mean() < 0.1


@pytest.mark.parametrize("objective,mask_frac,random_frac", [("mlm", 0.8, 0.1), ("rtd", 0.85, 0.0)])
def test_corruption_proportions(objective, mask_frac, random_frac):
    b = _batch(B=4000, T=40, V=30000)
    rng = torch.Generator().manual_seed(3)
    pos, w = choose_positions(b["input_ids"], b["attention_mask"], SP, 0.15, 6, rng)
    new = objectives.corrupt(b["input_ids"], pos, w, SP, 30000, mask_frac, random_frac, rng)
    orig, got = torch.gather(b["input_ids"], 1, pos)[w > 0], torch.gather(new, 1, pos)[w > 0]
    n = orig.numel()
    masked = (got == SP.mask).float().sum() / n
    kept = (got == orig).float().sum() / n
    assert abs(masked - mask_frac) < 0.01
    assert abs(kept - (1 - mask_frac - random_frac)) < 0.01  # random tokens rarely equal the original
    untouched = torch.ones_like(new, dtype=torch.bool)
    untouched.scatter_(1, pos, w == 0)
    assert (new[untouched] == b["input_ids"][untouched]).all()


def test_generator_shares_embeddings_and_has_paper_shape():
    p = presets.get("small")
    assert (p.model.generator.hidden_size, p.model.generator.num_heads, p.model.generator.ffn_size) == (64, 1, 256)
    assert p.model.generator.num_layers == 12
    m = objectives.build("rtd", p.with_knobs(num_layers=1), SP)
    assert m.generator.embeddings is m.discriminator.embeddings
    assert m.gen_head.word_embeddings.weight is m.discriminator.embeddings.word.weight
    assert m.generator.embed_proj is not m.discriminator.embed_proj  # each model projects E -> its own H
    # ELECTRA-Small: ~14M parameters (paper Table 1)
    assert 13.0e6 < count_parameters(objectives.build("mlm", p, SP).backbone()) < 14.5e6


def _tiny(**kw):
    p = presets.get("tiny")
    enc = dataclasses.replace(p.model.encoder, num_layers=1, vocab_size=kw.pop("vocab_size", 500))
    return p.with_knobs(encoder=enc, seq_len=32, **kw)




def test_discriminator_loss_does_not_reach_the_generator():
    """Sampling is not differentiable: the generator's layers get the same gradient whatever the
    discriminator's weight in the loss, while the shared embeddings get more with it."""
    p = _tiny()
    torch.manual_seed(0)
    m = objectives.build("rtd", p, SP)
    b = _batch(B=8, T=32, V=500)

    def grads(weight):
        m.disc_weight = weight
        m.zero_grad()
        torch.manual_seed(1)
        m(b, torch.Generator().manual_seed(0)).loss.backward()
        gen = [q.grad.clone() for q in m.generator.layers.parameters()]
        return gen, m.discriminator.embeddings.word.weight.grad.clone()

    gen50, emb50 = grads(50.0)
    gen0, emb0 = grads(0.0)
    assert all(torch.allclose(a, c) for a, c in zip(gen50, gen0))
    assert any(a.abs().sum() > 0 for a in gen50)
    assert not torch.allclose(emb50, emb0)


def test_a_sample_equal_to_the_original_counts_as_original():
    p = _tiny(vocab_size=6)
    m = objectives.build("rtd", p, SP)
    with torch.no_grad():
        m.gen_head.bias[:5] = -1e4  # the generator can only sample token 5
    ids = torch.full((4, 32), 5)
    ids[:, 0], ids[:, -1] = SP.cls, SP.sep
    b = {"input_ids": ids, "segment_ids": torch.zeros_like(ids), "attention_mask": torch.ones_like(ids)}
    r = m(b, torch.Generator().manual_seed(0))
    assert r.metrics["replaced_frac"] == 0
    assert r.metrics["gen_acc"] == 1


def test_rtd_replaces_about_mask_rate_with_an_untrained_generator():
    p = _tiny(vocab_size=3000)
    m = objectives.build("rtd", p, SP)
    r = m(_batch(B=64, T=32, V=3000), torch.Generator().manual_seed(0))
    # 15% masked; an untrained generator almost never samples the original out of 3000 tokens
    assert 0.11 < float(r.metrics["replaced_frac"]) < 0.16


def test_steps_are_pure_functions_of_the_seed():
    p = _tiny()
    for objective in ("mlm", "rtd"):
        torch.manual_seed(0)
        m = objectives.build(objective, p, SP)
        b = _batch(B=4, T=32, V=500)
        torch.manual_seed(5)
        a = m(b, torch.Generator().manual_seed(9)).loss
        torch.manual_seed(5)
        c = m(b, torch.Generator().manual_seed(9)).loss
        assert a.item() == c.item()
