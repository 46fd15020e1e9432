"""The official code's generator knobs as preset fields: each test fails when its knob is ignored."""

import dataclasses
import json
import math
import subprocess
import sys

import pytest
import torch
from scipy.stats import chisquare

from electra_bench import objectives, presets
from electra_bench.errors import BenchError
from electra_bench.flops import step_flops
from electra_bench.run_config import RunConfig
from electra_bench.special_tokens import DEFAULT as SP

from batches import random_batch
from config_dicts import schema1

V = 300


def _preset(layers=1, **kw):
    p = presets.get("tiny")
    enc = dataclasses.replace(p.model.encoder, num_layers=layers, vocab_size=kw.pop("vocab_size", V))
    return p.with_knobs(encoder=enc, **{"seq_len": 32, "batch_size": 8, **kw})


def _batch(B=8, T=32, vocab=V, seed=0):
    return random_batch(B, T, vocab, seed)


def _build(objective="rtd", **kw):
    torch.manual_seed(0)
    return objectives.build(objective, _preset(**kw), SP)


def _disc_input(m, batch, seed=4):
    """What the kept model reads (the corrupted input), and the step's result."""
    kept = m.discriminator if hasattr(m, "discriminator") else m.encoder
    seen = []
    handle = kept.register_forward_pre_hook(lambda mod, args: seen.append(args[0].clone()))
    try:
        torch.manual_seed(3)
        r = m(batch, torch.Generator().manual_seed(seed))
    finally:
        handle.remove()
    return seen[-1], r


def test_defaults_are_the_papers_electra():
    p = presets.get("small")
    assert (p.objective.gen_weight, p.objective.disc_weight, p.model.generator_layers, p.model.uniform_generator, p.model.embedding_sharing,
            p.model.untied_generator, p.objective.disallow_correct, p.objective.rtd_temperature, p.schedule.warmup_steps) == (
        1.0, 50.0, 1.0, False, "shared", True, False, 1.0, None)
    # recorded with the run (provenance and run.json hold the config) and read back; a run.json written
    # before the knobs existed (schema 1, flat, without them) reads back at their defaults
    knobs = {"gen_weight": 0.5, "generator_layers": 0.5, "uniform_generator": True, "embedding_sharing": "gdes",
             "warmup_steps": 100}
    for k, v in knobs.items():
        changed = p.with_knobs(**{k: v})
        assert RunConfig.from_dict(json.loads(json.dumps(changed.to_dict()))) == changed != p
    flat = {k: v for k, v in schema1(p).items() if k not in knobs}
    assert RunConfig.from_dict(flat) == p


def test_generator_layers():
    p = _preset(layers=4, generator_layers=0.5)
    assert p.model.generator.num_layers == 2 and _preset(layers=4, generator_layers=3).model.generator.num_layers == 3
    torch.manual_seed(0)
    m = objectives.build("rtd", p, SP)
    assert len(m.generator.layers) == 2 and len(m.discriminator.layers) == 4
    assert step_flops(p, "rtd", "paper").breakdown["generator"] < step_flops(
        _preset(layers=4), "rtd", "paper").breakdown["generator"]


def test_uniform_generator_samples_uniformly_whatever_the_priors():
    """Chi-square against uniform over the vocabulary: passes with the knob, fails without it (the
    learned generator starts at a skewed unigram prior here)."""
    vocab = 20
    skewed = torch.log_softmax(torch.linspace(0, 6, vocab), 0)
    batch = _batch(B=256, T=32, vocab=vocab)

    def sampled_counts(uniform):
        m = _build(uniform_generator=uniform, vocab_size=vocab, disallow_correct=False)
        m.init_output_priors(skewed)
        seen, r = _disc_input(m, batch)
        masked = _build("rtd-15", uniform_generator=uniform, vocab_size=vocab)  # same draws: where
        _, r15 = _disc_input(masked, batch)
        return torch.bincount(seen[r15.extras["token_mask"].bool()], minlength=vocab).double(), m, r

    counts, m, r = sampled_counts(True)
    assert counts.sum() >= 1000
    assert chisquare(counts.numpy()).pvalue > 1e-3
    assert objectives.generator_parameters(m) == 0 and not list(m.generator.parameters())
    assert float(r.metrics["gen_loss"]) == pytest.approx(math.log(vocab), rel=1e-6)
    learned, _, _ = sampled_counts(False)
    assert chisquare(learned.numpy()).pvalue < 1e-6
    # and it costs nothing in the paper's convention
    assert step_flops(_preset(uniform_generator=True), "rtd", "paper").breakdown["generator"] == 0


def _grad_abs(params):
    return sum(float(q.grad.abs().sum()) for q in params if q.grad is not None)


def test_untied_generator_embeddings():
    """'untied': the generator has its own (hidden-sized) embeddings, so the generator loss alone
    sends nothing into the discriminator's; 'shared' it does."""
    for sharing, reaches in (("shared", True), ("untied", False)):
        m = _build(embedding_sharing=sharing, disc_weight=0.0)  # loss = the generator's alone
        assert (m.generator.embeddings is m.discriminator.embeddings) == reaches
        assert m.gen_head.word_embeddings is m.generator.embeddings.word
        m(_batch(), torch.Generator().manual_seed(0)).loss.backward()
        assert (_grad_abs(m.discriminator.embeddings.parameters()) > 0) == reaches
    assert _preset(embedding_sharing="untied").model.generator.embedding_size == _preset().model.generator.hidden_size


def test_tied_generator_is_the_discriminator():
    """untied_generator off (official): one transformer; the generator loss trains the discriminator's
    layers. With the default separate generator it does not."""
    for untied in (True, False):
        m = _build(untied_generator=untied, disc_weight=0.0)
        assert (m.generator is m.discriminator) == (not untied)
        m(_batch(), torch.Generator().manual_seed(0)).loss.backward()
        assert (_grad_abs(m.discriminator.layers.parameters()) > 0) == (not untied)
    tied = _preset(untied_generator=False)
    assert tied.model.generator == tied.model.encoder
    with pytest.raises(BenchError, match="shares every weight"):
        objectives.build("rtd", _preset(untied_generator=False, embedding_sharing="untied"), SP)


def test_disallow_correct_never_samples_the_original():
    """A generator that can only propose the original token: without the knob nothing is replaced,
    with it every masked position is."""
    ids = torch.full((4, 32), 5)
    ids[:, 0], ids[:, -1] = SP.cls, SP.sep
    b = {"input_ids": ids, "segment_ids": torch.zeros_like(ids), "attention_mask": torch.ones_like(ids)}
    for disallow in (False, True):
        m = _build(vocab_size=6, disallow_correct=disallow)
        with torch.no_grad():
            m.gen_head.bias[:5] = -1e4
        seen, r = _disc_input(m, b)
        changed = int((seen != ids).sum())
        assert changed == (int(r.extras["mlm_weights"].sum()) if disallow else 0)
        assert float(r.metrics["replaced_frac"]) == changed / ids.numel()


def test_temperature_zero_is_the_argmax():
    for temperature, all_argmax in ((0.0, True), (1.0, False)):
        m = _build(rtd_temperature=temperature)
        with torch.no_grad():
            m.gen_head.bias[7] = 5.0  # the generator's favourite everywhere, at about 1/3 of the mass
        b = _batch()
        seen, _ = _disc_input(m, b)
        changed = seen[seen != b["input_ids"]]
        assert changed.numel() > 20
        assert bool((changed == 7).all()) == all_argmax


@pytest.mark.parametrize("objective", ["rtd", "rtd-15", "replace-mlm", "alltokens-mlm"])
def test_loss_weights(objective):
    m = _build(objective, gen_weight=3.0, disc_weight=7.0)
    torch.manual_seed(3)
    r = m(_batch(), torch.Generator().manual_seed(4))
    other = r.metrics["disc_loss"] * 7.0 if "disc_loss" in r.metrics else r.metrics["mlm_loss"]
    assert float(r.loss.detach()) == pytest.approx(float(3.0 * r.metrics["gen_loss"] + other), rel=1e-6)


def test_warmup_steps_replace_the_fraction(tmp_path, synthetic):
    from electra_bench.flops.budget import make_plan
    from electra_bench.pretrain.trainer import TrainOptions, pretrain

    p = _preset(warmup_steps=4).with_knobs(warmup_fraction=0.0)
    assert p.schedule.warmup_for(8) == 0.5 and p.with_knobs(warmup_steps=None).schedule.warmup_for(8) == 0.0
    plan = make_plan("mlm", "measured", 8e9 + 5e8, 1e9, (1.0,))
    pretrain(p, plan, synthetic(64, 32, V), None, SP, tmp_path,
             TrainOptions(quiet=True, log_every=1, peak_flops=1e11))
    lrs = {r["step"]: r["lr"] for r in map(json.loads, open(tmp_path / "log.jsonl")) if "lr" in r}
    assert lrs[1] == pytest.approx(p.optim.lr * 1 / 4) and lrs[3] == pytest.approx(p.optim.lr * 3 / 4 * (1 - 2 / 8))
    assert lrs[5] == pytest.approx(p.optim.lr * (1 - 4 / 8))


def test_cli_overrides_reach_the_recorded_preset():
    proc = subprocess.run(
        [sys.executable, "-m", "electra_bench.cli", "pretrain", "--preset", "small", "--objective", "rtd",
         "--budget", "1%", "--show-config", "--generator-layers", "0.5", "--uniform-generator",
         "--embedding-sharing", "untied", "--disallow-correct", "--gen-weight", "2", "--disc-weight", "20",
         "--temperature", "0.5", "--warmup-steps", "100"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    p = json.loads(proc.stdout)["preset"]
    model, objective = p["model"], p["objective"]
    assert (model["generator_layers"], model["uniform_generator"], model["embedding_sharing"],
            objective["disallow_correct"], objective["gen_weight"], objective["disc_weight"],
            objective["rtd_temperature"], p["schedule"]["warmup_steps"]) == (0.5, True, "untied", True, 2.0, 20.0, 0.5, 100)
    assert model["generator"]["num_layers"] == 6 and model["untied_generator"] is True and p["schema"] == 2


def test_resolve_refuses_contradictions():
    with pytest.raises(BenchError, match="--tied-generator"):
        presets.resolve("small", presets.Overrides(untied_generator=False, embedding_sharing="untied"))
    with pytest.raises(BenchError, match="embedding sharing 'both'"):
        presets.resolve("small", presets.Overrides(embedding_sharing="both"))
    assert presets.resolve("small", presets.Overrides(untied_generator=False)).model.untied_generator is False


# ---------------------------------------------------------------- DeBERTaV3's gradient-disentangled sharing


@pytest.mark.parametrize("objective", ["rtd", "rtd-15"])
def test_gdes_discriminator_loss_sends_no_gradient_into_the_shared_table(objective):
    """gen_weight 0: the discriminator's loss alone. Under gdes the shared table's gradient is exactly
    zero (and the residual's is not); with shared embeddings the shared table's is not."""
    for sharing in ("shared", "gdes"):
        m = _build(objective, embedding_sharing=sharing, gen_weight=0.0)
        m(_batch(), torch.Generator().manual_seed(0)).loss.backward()
        table = m.generator.embeddings.word.weight  # the shared table: the generator's
        assert table.grad is not None
        if sharing == "gdes":
            assert torch.count_nonzero(table.grad) == 0
            assert m.discriminator.embeddings.residual.weight.grad.abs().sum() > 0
        else:
            assert table.grad.abs().sum() > 0
    # the generator's loss still trains the shared table under gdes
    m = _build(objective, embedding_sharing="gdes", disc_weight=0.0)
    m(_batch(), torch.Generator().manual_seed(0)).loss.backward()
    assert m.generator.embeddings.word.weight.grad.abs().sum() > 0


def test_gdes_starts_where_shared_starts_and_checkpoints_as_a_plain_encoder(tmp_path):
    from electra_bench.pretrain import checkpoint

    shared, gdes = _build(), _build(embedding_sharing="gdes")
    b = _batch()
    torch.manual_seed(3)
    a = shared(b, torch.Generator().manual_seed(4)).loss
    torch.manual_seed(3)
    c = gdes(b, torch.Generator().manual_seed(4)).loss
    assert a.item() == c.item()  # residual zero, same norm: the same function at initialisation
    # after some training of the residual, the kept encoder is sg(E_G) + E_delta merged into one table
    with torch.no_grad():
        gdes.discriminator.embeddings.residual.weight.normal_(0, 0.1)
    gdes.eval()
    kept = gdes.backbone()
    assert type(kept.embeddings).__name__ == "Embeddings"
    args = (b["input_ids"], b["segment_ids"], b["attention_mask"])
    with torch.no_grad():
        expected = gdes.discriminator(*args)
        assert torch.allclose(kept(*args), expected, atol=1e-6)
    checkpoint.save_encoder(tmp_path / "ck", kept, {"objective": "rtd"})
    loaded, _ = checkpoint.load_encoder(tmp_path / "ck")
    with torch.no_grad():
        assert torch.allclose(loaded.eval()(*args), expected, atol=1e-6)


def test_gdes_is_for_a_discriminator_and_a_cli_choice():
    with pytest.raises(BenchError, match="gdes"):
        objectives.build("replace-mlm", _preset(embedding_sharing="gdes"), SP)
    with pytest.raises(BenchError, match="gdes"):
        objectives.build("rtd", _preset(embedding_sharing="gdes", untied_generator=False), SP)
    assert presets.resolve("tiny", presets.Overrides(embedding_sharing="gdes")).model.embedding_sharing == "gdes"
    p = _preset(embedding_sharing="gdes")
    assert step_flops(p, "rtd", "paper").flops_per_step == step_flops(_preset(), "rtd", "paper").flops_per_step
    assert objectives.parameter_counts(p)["generator"] == objectives.parameter_counts(_preset())["generator"]


def test_gdes_trains_saves_and_resumes(tmp_path, synthetic):
    """Through the trainer: measured FLOPs count it, checkpoints hold a plain encoder, a resumed run
    matches an uninterrupted one."""
    from electra_bench.flops import measured
    from electra_bench.pretrain import checkpoint
    from electra_bench.flops.budget import make_plan
    from electra_bench.pretrain.trainer import TrainOptions, pretrain

    p = _preset(embedding_sharing="gdes")
    assert measured.objective_count(p, "rtd", batch=1).unaccounted == {}
    plan = make_plan("rtd", "measured", 6e9 + 5e8, 1e9, (0.5, 1.0))
    data = synthetic(64, 32, V)

    def run(out, **kw):
        return pretrain(p, plan, data, None, SP, out, TrainOptions(quiet=True, log_every=2, peak_flops=1e11, **kw))

    run(tmp_path / "a")
    with pytest.raises(_Stop):
        run(tmp_path / "b", save_every_steps=2, after_step=(_stop_at(4),))
    run(tmp_path / "b")  # resumes from the state saved at step 4
    for run_dir in ("a", "b"):
        enc, meta = checkpoint.load_encoder(tmp_path / run_dir / "checkpoints" / "frac-1.0000")
        assert meta["objective"] == "rtd" and type(enc.embeddings).__name__ == "Embeddings"
    a = checkpoint.read_tensors(tmp_path / "a" / "checkpoints" / "frac-1.0000" / "model.safetensors")
    b = checkpoint.read_tensors(tmp_path / "b" / "checkpoints" / "frac-1.0000" / "model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


class _Stop(Exception):
    pass


def _stop_at(step):
    def hook(done):
        if done == step:
            raise _Stop
    return hook


# ---------------------------------------------------------------- the temperature warm-up (ours)


def test_temperature_warmup_schedule():
    p = _preset(rtd_temperature=1.0, rtd_temperature_warmup=(3.0, 0.25, 0.75))
    got = [p.objective.temperature_at(f) for f in (0.0, 0.2, 0.25, 0.5, 0.75, 0.9)]
    assert got == pytest.approx([3.0, 3.0, 3.0, 2.0, 1.0, 1.0])
    assert _preset(rtd_temperature=2.0).objective.temperature_at(0.1) == 2.0  # no warm-up: constant
    restored = RunConfig.from_dict(json.loads(json.dumps(p.to_dict())))
    assert restored.objective.rtd_temperature_warmup == (3.0, 0.25, 0.75)
    for bad in ((0.0, 0.1, 0.2), (2.0, 0.5, 0.25), (2.0, 0.1, 1.5)):
        with pytest.raises(BenchError, match="--temperature-warmup"):
            presets.resolve("tiny", presets.Overrides(rtd_temperature_warmup=bad))


def test_temperature_warmup_reaches_the_sampler_through_the_trainer(tmp_path, synthetic, monkeypatch):
    """Each step samples at the scheduled temperature (recorded where the objective samples, the sampling
    itself unchanged), and the log says which; a trainer that ignored the schedule would sample at 1."""
    from electra_bench.flops.budget import make_plan
    from electra_bench.pretrain.trainer import TrainOptions, pretrain

    from electra_bench.objectives import generator

    used = []
    real = generator.sample_replacements

    def recording(logits, originals, temperature, *args, **kw):
        used.append(temperature)
        return real(logits, originals, temperature, *args, **kw)

    monkeypatch.setattr(generator, "sample_replacements", recording)
    p = _preset(rtd_temperature=1.0, rtd_temperature_warmup=(3.0, 0.25, 0.75))
    plan = make_plan("rtd", "measured", 8e9 + 5e8, 1e9, (1.0,))
    pretrain(p, plan, synthetic(96, 32, V), None, SP, tmp_path, TrainOptions(quiet=True, log_every=1, peak_flops=1e11))
    assert plan.total_steps == 8
    assert used == pytest.approx([3.0, 3.0, 3.0, 2.5, 2.0, 1.5, 1.0, 1.0])
    logged = [r["temperature"] for r in map(json.loads, open(tmp_path / "log.jsonl")) if "temperature" in r]
    assert logged == pytest.approx(used)


def test_temperature_warmup_on_the_command_line(tmp_path):
    base = [sys.executable, "-m", "electra_bench.cli", "pretrain", "--preset", "small", "--objective", "rtd",
            "--budget", "1%", "--show-config"]
    ok = subprocess.run(base + ["--temperature-warmup", "2:0.125:0.25"], capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["preset"]["objective"]["rtd_temperature_warmup"] == [2.0, 0.125, 0.25]
    for bad, says in (("2:0.1", "T:HOLD:END"), ("2:0.5:0.25", "HOLD <= END")):
        proc = subprocess.run(base + ["--temperature-warmup", bad], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 2 and says in proc.stderr and "Traceback" not in proc.stderr
