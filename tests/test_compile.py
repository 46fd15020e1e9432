"""The training step compiles whole: no graph breaks, no generator inside the graph, no host sync.

`draw_noise` makes the step's draws eagerly (torch.compile cannot trace a `torch.Generator`); `compute` is
the rest, and with `padded` decided on the host it must be one graph. A `.item()`, `bool(tensor)` or a
data-dependent branch (a host sync on CUDA) would show up here as a graph break.
"""

import dataclasses

import pytest
import torch
import torch._dynamo

from electra_bench import model as M
from electra_bench import objectives, presets
from electra_bench.special_tokens import DEFAULT as SP


def _model(objective, dropout):
    p = presets.get("tiny").for_objective(objective)
    p = dataclasses.replace(p, encoder=dataclasses.replace(p.encoder, num_layers=1, vocab_size=300,
                                                           dropout=dropout))
    torch.manual_seed(0)
    return objectives.build(objective, p, SP)


def _batch(padded: bool, B=4, T=32):
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, 300, (B, T), generator=g)
    ids[:, 0], ids[:, -1] = SP.cls, SP.sep
    att = torch.ones_like(ids)
    if padded:
        ids[1, 20:], ids[1, 19], att[1, 20:] = SP.pad, SP.sep, 0
    return {"input_ids": ids, "segment_ids": torch.zeros_like(ids), "attention_mask": att}


@pytest.mark.parametrize("objective", ["mlm", "rtd"])
@pytest.mark.parametrize("dropout,padded", [(0.1, False), (0.0, True)])
def test_compute_is_one_graph_without_breaks(objective, dropout, padded):
    m = _model(objective, dropout).train()
    b = _batch(padded)
    noise = m.draw_noise(b, torch.Generator().manual_seed(1))
    torch._dynamo.reset()
    e = torch._dynamo.explain(m.compute)(b, noise, padded)
    assert e.graph_break_count == 0, [str(r.reason)[:200] for r in e.break_reasons]
    assert e.graph_count == 1


@pytest.mark.parametrize("objective", ["mlm", "rtd"])
def test_compiled_step_trains_like_eager(objective, monkeypatch):
    """fullgraph (a break would raise) through AOTAutograd (forward and backward traced), cheap backend.
    A compiled step draws dropout masks with torch's own dropout (model.dropout's 16-bit masks are for eager
    CPU only), so the eager reference does too."""
    m = _model(objective, 0.1).train()
    b = _batch(False)
    torch.manual_seed(5)
    with monkeypatch.context() as patch:
        patch.setattr(M, "_cpu_eager", lambda x: False)  # eager with F.dropout and SDPA: what the graph holds
        eager = m(b, torch.Generator().manual_seed(2), padded=False)
    eager.loss.backward()
    g_eager = [p.grad.clone() for p in m.parameters()]
    m.zero_grad()
    torch._dynamo.reset()
    m.compile_step(fullgraph=True, backend="aot_eager")
    torch.manual_seed(5)
    comp = m(b, torch.Generator().manual_seed(2), padded=False)  # the draws stay eager, same generator
    comp.loss.backward()
    assert comp.loss.item() == pytest.approx(eager.loss.item(), rel=1e-5)
    for a, c in zip(g_eager, (p.grad for p in m.parameters())):
        torch.testing.assert_close(c, a, rtol=1e-4, atol=1e-6)
    torch._dynamo.reset()
