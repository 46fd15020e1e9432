"""The training step compiles whole: no graph breaks, no generator inside the graph, no host sync.

`draw_noise` makes the step's draws eagerly (torch.compile cannot trace a `torch.Generator`); `compute` is
the rest, and with `padded` decided on the host it must be one graph. A `.item()`, `bool(tensor)` or a
data-dependent branch (a host sync on CUDA) would show up here as a graph break.
"""


import pytest
import torch
import torch._dynamo

from electra_bench import model as M
from electra_bench import objectives, presets
from electra_bench.special_tokens import DEFAULT as SP


def _model(objective, dropout):
    p = presets.get("tiny").for_objective(objective)
    p = p.with_knobs(num_layers=1, vocab_size=300, dropout=dropout)
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


@pytest.mark.parametrize("objective", ["mlm", "rtd"])
def test_pretrain_compile_trains_the_compiled_compute_like_eager(objective, tmp_path, synthetic, monkeypatch):
    """`pretrain --compile` goes through `trainer.compile_forward`, which compiles the objective's `compute`
    (fullgraph here, so a graph break raises) and keeps the draws eager: the run's losses match eager's.
    The cheap aot_eager backend stands in for inductor (same tracing, no code generation)."""
    import functools
    import json

    from electra_bench.pretrain import trainer
    from electra_bench.flops.budget import make_plan

    p = presets.get("tiny").for_objective(objective)
    p = p.with_knobs(num_layers=1)
    plan = make_plan(objective, "measured", 3e9, 1e9, (1.0,))
    real = trainer.compile_forward
    losses = {}
    for mode in ("eager", "compiled"):
        if mode == "compiled":
            monkeypatch.setattr(trainer, "compile_forward", functools.partial(real, backend="aot_eager", fullgraph=True))
        torch._dynamo.reset()
        out = tmp_path / mode
        trainer.pretrain(p, plan, synthetic(32, 64, 2048), None, SP, out, trainer.TrainOptions(
            quiet=True, log_every=1, peak_flops=1e11, compile=mode == "compiled", diagnostics_every=0))
        losses[mode] = [json.loads(line)["loss"] for line in open(out / "log.jsonl") if '"loss"' in line]
    torch._dynamo.reset()
    assert len(losses["eager"]) == plan.total_steps >= 2
    assert losses["compiled"] == pytest.approx(losses["eager"], rel=1e-5)


@pytest.mark.parametrize("objective", ["mlm", "rtd", "rtd-15", "replace-mlm", "alltokens-mlm"])
def test_the_trainer_tells_the_encoder_whether_the_batch_is_padded(objective, tmp_path, synthetic, monkeypatch):
    """The trainer reads the padding from the host copy of each batch and passes it down, so no encoder reads
    the attention mask on the device (on CUDA, a host sync every step; under compile, a masked kernel)."""
    from electra_bench.pretrain import trainer
    from electra_bench.flops.budget import make_plan

    seen = []
    real = M.Encoder.forward

    def spy(self, input_ids, segment_ids, attention_mask, padded=None):
        seen.append(padded)
        return real(self, input_ids, segment_ids, attention_mask, padded)

    monkeypatch.setattr(M.Encoder, "forward", spy)
    p = presets.get("tiny").for_objective(objective)
    plan = make_plan(objective, "measured", 3e9, 1e9, (1.0,))
    trainer.pretrain(p, plan, synthetic(32, 64, 2048), None, SP, tmp_path, trainer.TrainOptions(
        quiet=True, peak_flops=1e11, diagnostics_every=0))
    assert seen and all(s is False for s in seen), seen  # packed sequences: no padding, decided on the host


COMPILE_CASES = {
    "mlm": ("mlm", {}), "rtd": ("rtd", {}), "rtd-15": ("rtd-15", {}), "replace-mlm": ("replace-mlm", {}),
    "alltokens-mlm": ("alltokens-mlm", {}), "uniform-generator": ("rtd", {"uniform_generator": True}),
    "gdes": ("rtd", {"embedding_sharing": "gdes"}),
}


@pytest.mark.parametrize("case", list(COMPILE_CASES))
def test_every_objective_compiles_whole_and_never_recompiles(case):
    """Each objective's `compute` is one graph (fullgraph=True raises on a break) and 20 training steps on
    fresh draws and batches reuse it: a recompile raises under the "fail_on_recompile" stance. The cheap
    aot_eager backend traces forward and backward as inductor would, without code generation."""
    objective, knobs = COMPILE_CASES[case]
    p = presets.get("tiny").for_objective(objective)
    p = p.with_knobs(num_layers=1, vocab_size=300, **knobs)
    torch.manual_seed(0)
    m = objectives.build(objective, p, SP).train()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    torch._dynamo.reset()
    m.compile_step(fullgraph=True, backend="aot_eager")
    assert m.compiled
    losses = []
    for step in range(21):
        b = _batch(False)
        b["input_ids"][:, 1:-1] = torch.randint(5, 300, (4, 30), generator=torch.Generator().manual_seed(step))
        if step == 1:
            torch.compiler.set_stance("fail_on_recompile")
        try:
            r = m(b, torch.Generator().manual_seed(step), padded=False)
        finally:
            if step >= 1:
                torch.compiler.set_stance("default")
        opt.zero_grad()
        r.loss.backward()
        opt.step()
        losses.append(r.loss.item())
    torch._dynamo.reset()
    assert all(torch.isfinite(torch.tensor(losses)))


def test_rtd15_compile_runs_compiled_not_eager(monkeypatch):
    """`rtd-15` used to inherit `compile_step` but override `forward`, so --compile left it eager; now its
    `compute` is what runs, compiled (a spy on the compiled callable sees every step)."""
    from electra_bench.pretrain import trainer

    m = _model("rtd-15", 0.0).train()
    torch._dynamo.reset()
    trainer.compile_forward(m, backend="aot_eager", fullgraph=True)
    calls = []
    real = m._compiled
    m._compiled = lambda *a, **k: calls.append(1) or real(*a, **k)
    m(_batch(False), torch.Generator().manual_seed(0), padded=False).loss.backward()
    assert calls == [1]
    torch._dynamo.reset()


def test_compile_refuses_what_is_not_an_objective():
    from electra_bench.errors import BenchError
    from electra_bench.pretrain import trainer

    with pytest.raises(BenchError, match="not an objective"):
        trainer.compile_forward(torch.nn.Linear(2, 2))


@pytest.mark.parametrize("objective", ["rtd", "replace-mlm"])
def test_the_compiled_step_writes_to_none_of_its_inputs(objective):
    """CUDA graphs (`--compile` on CUDA: mode reduce-overhead) are skipped for a graph that mutates an input,
    with a warning and no error, so the step would quietly run as launches again. Eager sampling overwrites
    the gumbel draw in place (it is the step's largest tensor); the compiled step must leave it, and every
    other input, as it was, and still sample what eager samples."""
    m = _model(objective, 0.0).train()
    b = _batch(False)
    noise = m.draw_noise(b, torch.Generator().manual_seed(3))
    before = {"gumbel": noise.gumbel.clone(), "scores": noise.scores.clone(), "r": noise.corrupt_r.clone(),
              **{k: v.clone() for k, v in b.items()}}
    torch._dynamo.reset()
    m.compile_step(fullgraph=True, backend="aot_eager")
    compiled = m(b, noise=noise, padded=False)
    after = {"gumbel": noise.gumbel, "scores": noise.scores, "r": noise.corrupt_r, **b}
    assert all(torch.equal(before[k], after[k]) for k in before)
    eager = m.compute(b, noise, padded=False)  # eager: consumes the draw in place, as it always did
    assert not torch.equal(noise.gumbel, before["gumbel"])
    assert torch.equal(compiled.extras["mlm_labels"], eager.extras["mlm_labels"])
    assert compiled.metrics["replaced_frac"].item() == pytest.approx(eager.metrics["replaced_frac"].item())
    torch._dynamo.reset()


def test_evaluation_calls_stay_eager_under_compile():
    """The compiled graph is the training step's. The held-out diagnostics call the objective in eval mode
    on other batch shapes: through the compiled function each would compile (and on CUDA record) another
    graph; they run eager, and the training step still finds its one graph."""
    m = _model("rtd", 0.0)
    torch._dynamo.reset()
    m.compile_step(fullgraph=True, backend="aot_eager")
    m.train()
    m(_batch(False), torch.Generator().manual_seed(0), padded=False).loss.backward()
    torch.compiler.set_stance("fail_on_recompile")
    try:
        with torch.no_grad():
            m.eval()
            m(_batch(True, B=3, T=24), torch.Generator().manual_seed(1))  # another shape, padded, eval mode
            m.train()
        m(_batch(False), torch.Generator().manual_seed(2), padded=False).loss.backward()
    finally:
        torch.compiler.set_stance("default")
        torch._dynamo.reset()


def test_temperature_warmup_compiles_once(tmp_path, synthetic, monkeypatch):
    """`--temperature-warmup` with `--compile`: the temperature reaches the compiled step as a 0-d tensor
    updated in place, so its changing value never recompiles (a Python float would be a constant of the
    graph); the schedule is the eager run's, logged the same, and the losses follow eager's."""
    import functools
    import json

    from electra_bench.pretrain import trainer
    from electra_bench.flops.budget import make_plan

    p = presets.get("tiny").for_objective("rtd")
    p = p.with_knobs(num_layers=1, batch_size=8, seq_len=32, rtd_temperature=1.0, rtd_temperature_warmup=(3.0, 0.25, 0.75))
    plan = make_plan("rtd", "measured", 8e9 + 5e8, 1e9, (1.0,))
    real = trainer.compile_forward
    rows = {}
    for mode in ("eager", "compiled"):
        compiling = mode == "compiled"
        if compiling:
            monkeypatch.setattr(trainer, "compile_forward", functools.partial(real, backend="aot_eager",
                                                                              fullgraph=True))
        # after the first (compiling) step, any recompile raises
        strict = (lambda done: torch.compiler.set_stance("fail_on_recompile") if done == 1 else None,)
        torch._dynamo.reset()
        try:
            trainer.pretrain(p, plan, synthetic(96, 32, 2048), None, SP, tmp_path / mode, trainer.TrainOptions(
                quiet=True, log_every=1, peak_flops=1e11, diagnostics_every=0, compile=compiling,
                after_step=strict if compiling else ()))
        finally:
            torch.compiler.set_stance("default")
            torch._dynamo.reset()
        rows[mode] = [json.loads(line) for line in open(tmp_path / mode / "log.jsonl") if '"loss"' in line]
    assert [r["temperature"] for r in rows["compiled"]] == [r["temperature"] for r in rows["eager"]] == \
        pytest.approx([3.0, 3.0, 3.0, 2.5, 2.0, 1.5, 1.0, 1.0])
    assert [r["loss"] for r in rows["compiled"]] == pytest.approx([r["loss"] for r in rows["eager"]], rel=1e-4)
