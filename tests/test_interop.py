"""Our encoder, heads and objectives against transformers' BERT/ELECTRA (fp32, random weights): export ->
transformers, transformers -> import, round trips, tokenizer ids, losses, and the CLI around them.

Random weights are drawn for every tensor (LayerNorm gains and biases included), so a swapped or
misnamed tensor changes the outputs; tolerance: 1e-5 of the activation scale (max |activation|)."""

import dataclasses
import json
import lzma
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

transformers = pytest.importorskip("transformers")
from transformers import (AutoTokenizer, BertConfig, BertForMaskedLM, ElectraConfig,  # noqa: E402
                          ElectraForMaskedLM, ElectraForPreTraining, ElectraModel)

from electra_bench import objectives, presets  # noqa: E402
from electra_bench.data.tokenizer import Tokenizer  # noqa: E402
from electra_bench.errors import BenchError  # noqa: E402
from electra_bench.interop import hf_import, hf_names  # noqa: E402
from electra_bench.present.export import export  # noqa: E402
from electra_bench.store.layout import TOKENIZER_FROM_CHECKPOINT, PretrainLayout  # noqa: E402
from electra_bench.objectives import choose_positions, corrupt, sample_replacements  # noqa: E402
from electra_bench.pretrain import checkpoint  # noqa: E402
from electra_bench.pretrain.run import with_vocab  # noqa: E402

transformers.logging.set_verbosity_error()
TOL = 1e-5
CORPUS = Path(__file__).resolve().parent.parent / "electra_bench" / "assets" / "suite" / "corpus.txt.xz"


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    with lzma.open(CORPUS, "rt", encoding="utf-8") as f:
        lines = [next(f) for _ in range(3000)]
    return Tokenizer.train(lines, 600)


def small_preset(tokenizer, embedding_size: int, **changes) -> presets.RunConfig:
    p = with_vocab(presets.get("tiny"), tokenizer.vocab_size)
    enc = dataclasses.replace(p.model.encoder, hidden_size=64, embedding_size=embedding_size, num_layers=2, num_heads=2,
                              ffn_size=128, dropout=0.0, max_positions=64)
    return p.with_knobs(encoder=enc, seq_len=32, batch_size=4, **changes)


def randomize(module: torch.nn.Module, seed: int = 0) -> None:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            noise = torch.randn(p.shape, generator=g) * 0.2
            p.copy_(1 + noise if "norm" in name and name.endswith("weight") else noise)


def make_checkpoint(root: Path, objective: str, preset: presets.RunConfig, tokenizer: Tokenizer, seed: int = 0):
    """A pre-training directory holding one checkpoint of `objective` with random weights, written by the
    trainer's own save path (checkpoint.save_encoder with the objective)."""
    module = objectives.build(objective, preset, tokenizer.special)
    randomize(module, seed)
    out = PretrainLayout(root)
    out.root.mkdir(parents=True)
    tokenizer.save(out.tokenizer)
    (out.run_file).write_text(json.dumps({"preset": preset.to_dict(), "plan": {"total_steps": 10},
                                          "data": {"corpus_sha256": "test"}}))
    meta = {"objective": objective, "fraction": 1.0, "step": 10, "train_flops": 1e9, "convention": "measured",
            "preset": preset.name, "seed": seed, "seq_len": preset.schedule.seq_len, "tokenizer": TOKENIZER_FROM_CHECKPOINT,
            "finetune_lr": preset.evaluation.finetune_lr, "layerwise_lr_decay": preset.evaluation.layerwise_lr_decay}
    checkpoint.save_encoder(out.checkpoint(1.0), module.backbone(), meta, objective=module)
    return out.checkpoint(1.0), module.eval()


def batch(tokenizer, padded: bool, n: int = 3, T: int = 24, seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, tokenizer.vocab_size, (n, T), generator=g)
    ids[:, 0] = tokenizer.special.cls
    att = torch.ones_like(ids)
    if padded:
        for i, length in enumerate((T, T - 7, T - 15)[:n]):
            ids[i, length - 1] = tokenizer.special.sep
            ids[i, length:] = tokenizer.special.pad
            att[i, length:] = 0
    else:
        ids[:, -1] = tokenizer.special.sep
    seg = torch.zeros_like(ids)
    seg[:, T // 2:] = 1
    return {"input_ids": ids, "segment_ids": seg, "attention_mask": att}


def close(ours: torch.Tensor, theirs: torch.Tensor) -> float:
    """Max difference relative to the activation scale."""
    return float((ours - theirs).abs().max() / ours.abs().max().clamp(min=1e-12))


def hf_kwargs(b):
    return {"input_ids": b["input_ids"], "token_type_ids": b["segment_ids"], "attention_mask": b["attention_mask"]}


# ---- export: our model vs the exported one loaded by transformers -----------------------------------------


@pytest.mark.parametrize("embedding_size", [64, 32], ids=["E=H", "E<H"])
@pytest.mark.parametrize("padded", [False, True], ids=["packed", "padded"])
def test_exported_rtd_computes_what_ours_does(tmp_path, tokenizer, embedding_size, padded):
    ckpt, m = make_checkpoint(tmp_path / "run", "rtd", small_preset(tokenizer, embedding_size), tokenizer)
    export(ckpt, tmp_path / "hf")
    disc = ElectraForPreTraining.from_pretrained(tmp_path / "hf").eval()
    gen = ElectraForMaskedLM.from_pretrained(tmp_path / "hf" / "generator").eval()
    b = batch(tokenizer, padded)
    positions = torch.tensor([[1, 3, 5], [2, 4, 6], [1, 2, 3]])
    with torch.no_grad():
        h = m.discriminator(b["input_ids"], b["segment_ids"], b["attention_mask"])
        out = disc(**hf_kwargs(b), output_hidden_states=True)
        assert close(h, out.hidden_states[-1]) < TOL
        assert close(m.disc_head(h), out.logits) < TOL
        gh = m.generator(b["input_ids"], b["segment_ids"], b["attention_mask"])
        ours = m.gen_head(gh, positions)  # (B, P, V)
        theirs = torch.gather(gen(**hf_kwargs(b)).logits, 1, positions[..., None].expand(-1, -1, ours.shape[-1]))
        assert close(ours, theirs) < TOL
    assert ElectraModel.from_pretrained(tmp_path / "hf") is not None  # the encoder alone loads too


@pytest.mark.parametrize("embedding_size,arch", [(64, BertForMaskedLM), (32, ElectraForMaskedLM)], ids=["E=H", "E<H"])
@pytest.mark.parametrize("padded", [False, True], ids=["packed", "padded"])
def test_exported_mlm_computes_what_ours_does(tmp_path, tokenizer, embedding_size, arch, padded):
    ckpt, m = make_checkpoint(tmp_path / "run", "mlm", small_preset(tokenizer, embedding_size), tokenizer)
    export(ckpt, tmp_path / "hf")
    assert json.loads((tmp_path / "hf" / "config.json").read_text())["architectures"] == [arch.__name__]
    hf = arch.from_pretrained(tmp_path / "hf").eval()
    b = batch(tokenizer, padded)
    positions = torch.tensor([[1, 3, 5], [2, 4, 6], [1, 2, 3]])
    with torch.no_grad():
        h = m.encoder(b["input_ids"], b["segment_ids"], b["attention_mask"])
        out = hf(**hf_kwargs(b), output_hidden_states=True)
        assert close(h, out.hidden_states[-1]) < TOL
        ours = m.head(h, positions)
        theirs = torch.gather(out.logits, 1, positions[..., None].expand(-1, -1, ours.shape[-1]))
        assert close(ours, theirs) < TOL


def test_gdes_is_folded_exactly(tmp_path, tokenizer):
    """GDES's sg(E_G) + E_delta becomes one plain table: the exported discriminator computes what the
    GDES discriminator does."""
    preset = small_preset(tokenizer, 32, embedding_sharing="gdes")
    ckpt, m = make_checkpoint(tmp_path / "run", "rtd", preset, tokenizer)
    export(ckpt, tmp_path / "hf")
    disc = ElectraForPreTraining.from_pretrained(tmp_path / "hf").eval()
    b = batch(tokenizer, True)
    with torch.no_grad():
        h = m.discriminator(b["input_ids"], b["segment_ids"], b["attention_mask"])
        assert close(m.disc_head(h), disc(**hf_kwargs(b)).logits) < TOL


# ---- the objectives' losses from transformers' outputs ----------------------------------------------------


def test_losses_from_transformers_outputs_equal_ours(tmp_path, tokenizer):
    preset = small_preset(tokenizer, 32)
    b = batch(tokenizer, True)
    for objective in ("mlm", "rtd"):
        ckpt, m = make_checkpoint(tmp_path / objective, objective, preset, tokenizer)
        export(ckpt, tmp_path / f"{objective}-hf")
        rng = torch.Generator().manual_seed(5)
        noise = m.draw_noise(b, rng)
        gumbel = None if noise.gumbel is None else noise.gumbel.clone()  # compute overwrites it
        with torch.no_grad():
            ours = m.compute(b, noise)
        ids, seg, att = b["input_ids"], b["segment_ids"], b["attention_mask"]
        positions, weights = choose_positions(ids, att, m.special, m.mask_prob, m.max_predictions, None,
                                              scores=noise.scores)
        labels = torch.gather(ids, 1, positions)

        def masked_ce(logits_all):  # (B, T, V) -> the weighted mean CE at the masked positions
            logits = torch.gather(logits_all, 1, positions[..., None].expand(-1, -1, logits_all.shape[-1]))
            ce = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), reduction="none")
            return (ce * weights.flatten()).sum() / weights.sum(), logits

        if objective == "mlm":
            hf = (BertForMaskedLM if preset.model.encoder.embedding_size == 64 else ElectraForMaskedLM).from_pretrained(
                tmp_path / "mlm-hf").eval()
            corrupted = corrupt(ids, positions, weights, m.special, tokenizer.vocab_size, 0.8, 0.1, None,
                                draws=(noise.corrupt_r, noise.corrupt_tokens))
            with torch.no_grad():
                loss, _ = masked_ce(hf(input_ids=corrupted, token_type_ids=seg, attention_mask=att).logits)
            assert abs(float(loss) - float(ours.loss)) < TOL * float(ours.loss)
            continue
        gen = ElectraForMaskedLM.from_pretrained(tmp_path / "rtd-hf" / "generator").eval()
        disc = ElectraForPreTraining.from_pretrained(tmp_path / "rtd-hf").eval()
        gen_in = corrupt(ids, positions, weights, m.special, tokenizer.vocab_size, 0.85, 0.0, None,
                         draws=(noise.corrupt_r, noise.corrupt_tokens))
        with torch.no_grad():
            gen_loss, gen_logits = masked_ce(gen(input_ids=gen_in, token_type_ids=seg, attention_mask=att).logits)
            sampled = sample_replacements(gen_logits, labels, m.temperature, m.disallow_correct, None, uniform=gumbel)
            disc_in = ids.scatter(1, positions, torch.where(weights > 0, sampled, labels))
            replaced = (disc_in != ids).float()
            logits = disc(input_ids=disc_in, token_type_ids=seg, attention_mask=att).logits
            bce = F.binary_cross_entropy_with_logits(logits, replaced, reduction="none")
            disc_loss = (bce * att).sum() / att.sum()
        assert torch.equal(replaced, ours.extras["replaced"])  # the same replacements
        assert abs(float(gen_loss) - float(ours.metrics["gen_loss"])) < TOL * float(gen_loss)
        assert abs(float(disc_loss) - float(ours.metrics["disc_loss"])) < TOL * float(disc_loss)
        total = gen_loss + m.disc_weight * disc_loss
        assert abs(float(total) - float(ours.loss)) < TOL * float(total)


# ---- import: a transformers model vs transformers itself ----------------------------------------------------


def _hf_model_folder(tmp_path: Path, cls, config, tokenizer: Tokenizer) -> Path:
    torch.manual_seed(0)
    model = cls(config).eval()
    randomize(model, 3)
    folder = tmp_path / cls.__name__
    model.save_pretrained(folder)
    vocab = {t: i for i, t in enumerate(tokenizer.vocab)}
    transformers.BertTokenizer(vocab=vocab, do_lower_case=True).save_pretrained(folder)
    return folder


@pytest.mark.parametrize("cls", [ElectraForPreTraining, ElectraModel, BertForMaskedLM], ids=lambda c: c.__name__)
@pytest.mark.parametrize("padded", [False, True], ids=["packed", "padded"])
def test_imported_model_computes_what_transformers_does(tmp_path, tokenizer, cls, padded):
    common = dict(vocab_size=tokenizer.vocab_size, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=128, max_position_embeddings=64, hidden_dropout_prob=0.0,
                  attention_probs_dropout_prob=0.0)
    config = BertConfig(**common) if cls is BertForMaskedLM else ElectraConfig(embedding_size=32, **common)
    folder = _hf_model_folder(tmp_path, cls, config, tokenizer)
    hf = cls.from_pretrained(folder).eval()
    ext = hf_import.load_external(folder)
    assert ext.tokenizer.vocab == tokenizer.vocab
    b = batch(tokenizer, padded)
    with torch.no_grad():
        theirs = hf(**hf_kwargs(b), output_hidden_states=True).hidden_states[-1]
        ours = ext.encoder.eval()(b["input_ids"], b["segment_ids"], b["attention_mask"])
    assert close(ours, theirs) < TOL


def test_export_import_round_trip_is_bit_identical(tmp_path, tokenizer):
    for objective, E in (("rtd", 32), ("mlm", 64), ("mlm", 32)):
        ckpt, m = make_checkpoint(tmp_path / f"{objective}{E}", objective, small_preset(tokenizer, E), tokenizer)
        hf_dir = tmp_path / f"{objective}{E}-hf"
        export(ckpt, hf_dir)
        ext = hf_import.load_external(hf_dir)
        kept = m.backbone().state_dict()
        assert set(ext.encoder.state_dict()) == set(kept)
        for k, v in ext.encoder.state_dict().items():
            assert torch.equal(v, kept[k]), k
        head, ours_head = ("discriminator", m.disc_head) if objective == "rtd" else (
            "bert_mlm" if E == 64 else "electra_mlm", m.head)
        for k, v in hf_names.head_from_hf(ext.state, head).items():
            assert torch.equal(v, ours_head.state_dict()[k]), k
        if objective == "rtd":  # the generator too
            gen_state = hf_import.load_external(hf_dir / "generator").encoder.state_dict()
            for k, v in m.generator.state_dict().items():
                assert torch.equal(gen_state[k], v), k
        # finetune reads the exported folder's own recipe and FLOPs
        assert ext.meta["train_flops"] == 1e9 and ext.meta["objective"] == objective


def test_autotokenizer_gives_the_tools_ids_on_the_embedded_corpus(tmp_path, tokenizer):
    ckpt, _ = make_checkpoint(tmp_path / "run", "rtd", small_preset(tokenizer, 32), tokenizer)
    export(ckpt, tmp_path / "hf")
    auto = AutoTokenizer.from_pretrained(tmp_path / "hf")
    with lzma.open(CORPUS, "rt", encoding="utf-8") as f:
        lines = [next(f).rstrip("\n") for _ in range(1000)]
    special = tokenizer.special
    ours = [[special.cls] + ids + [special.sep] for ids in tokenizer.encode_batch(lines)]
    assert auto(lines)["input_ids"] == ours
    reloaded = Tokenizer.from_hf(tmp_path / "hf")  # and back: the same tokenizer, same identity
    assert reloaded.sha256 == tokenizer.sha256 and reloaded.encode_batch(lines) == tokenizer.encode_batch(lines)


def test_cased_tokenizer_keeps_case(tmp_path, tokenizer):
    vocab = tokenizer.vocab + ["Cat"]
    folder = tmp_path / "cased"
    folder.mkdir()
    (folder / "vocab.txt").write_text("".join(t + "\n" for t in vocab))
    (folder / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": False}))
    cased = Tokenizer.from_hf(folder)
    hf = transformers.BertTokenizer(vocab={t: i for i, t in enumerate(vocab)}, do_lower_case=False)
    assert cased.encode("Cat sat") == hf("Cat sat", add_special_tokens=False)["input_ids"]
    assert cased.encode("Cat")[0] == len(vocab) - 1  # "Cat" itself, not "cat"
    assert cased.sha256 != Tokenizer(vocab).sha256  # a cased tokenizer is not the uncased one


# ---- what is refused ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("change,words", [
    ({"model_type": "roberta"}, "padding index"),
    ({"model_type": "deberta-v2"}, "relative positions"),
    ({"hidden_act": "relu"}, "hidden_act 'relu'"),
    ({"position_embedding_type": "relative_key"}, "absolute positions only"),
    ({"is_decoder": True}, "decoder"),
])
def test_models_our_encoder_cannot_compute_are_refused(tmp_path, tokenizer, change, words):
    ckpt, _ = make_checkpoint(tmp_path / "run", "mlm", small_preset(tokenizer, 64), tokenizer)
    export(ckpt, tmp_path / "hf")
    cfg = json.loads((tmp_path / "hf" / "config.json").read_text())
    (tmp_path / "hf" / "config.json").write_text(json.dumps({**cfg, **change}))
    with pytest.raises(BenchError, match=words):
        hf_import.load_external(tmp_path / "hf")


def test_unknown_encoder_tensors_are_refused(tmp_path, tokenizer):
    ckpt, _ = make_checkpoint(tmp_path / "run", "mlm", small_preset(tokenizer, 64), tokenizer)
    export(ckpt, tmp_path / "hf")
    state = checkpoint.read_tensors(tmp_path / "hf" / "model.safetensors")
    state["bert.encoder.layer.0.attention.self.distance_embedding.weight"] = torch.zeros(3, 3)
    checkpoint.write_tensors(tmp_path / "hf" / "model.safetensors", state)
    with pytest.raises(BenchError, match="distance_embedding"):
        hf_import.load_external(tmp_path / "hf")


# ---- the command line ----------------------------------------------------------------------------------------


def _cli(*args, env=None, cwd=None):
    return subprocess.run([sys.executable, "-m", "electra_bench", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=600)


def fake_hub_cache(cache: Path, models: dict[str, Path]) -> Path:
    """A Hugging Face hub cache laid out as huggingface_hub writes it (models--org--name/refs/main and
    snapshots/<rev>/), holding the given folders: what `hf:NAME` finds without a download."""
    import os

    for name, folder in models.items():
        repo = cache / ("models--" + name.replace("/", "--"))
        (repo / "snapshots").mkdir(parents=True)
        (repo / "refs").mkdir()
        (repo / "refs" / "main").write_text("0" * 40)
        os.symlink(folder, repo / "snapshots" / ("0" * 40))
    return cache


def test_cli_export_then_finetune_hf_name_from_the_local_cache(tmp_path, tokenizer):
    """`export` writes a folder; `finetune hf:NAME` finds it in a Hugging Face cache (never downloading)
    and scores it on the embedded suite, the same as the checkpoint it came from."""
    import os

    ckpt, _ = make_checkpoint(tmp_path / "run", "rtd", small_preset(tokenizer, 32), tokenizer)
    r = _cli("export", str(ckpt), "--out", str(tmp_path / "hf"))
    assert r.returncode == 0, r.stderr
    assert "ElectraForPreTraining" in r.stdout and "generator" in r.stdout
    again = _cli("export", str(ckpt), "--out", str(tmp_path / "hf"))
    assert again.returncode == 2 and again.stderr.count("\n") == 1 and "--overwrite" in again.stderr
    cache = fake_hub_cache(tmp_path / "hub", {"test/tiny-electra": tmp_path / "hf"})
    env = {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    args = ["--protocol", "probe", "--seeds", "1", "--json"]
    via_hub = _cli("finetune", "hf:test/tiny-electra", *args, env=env)
    assert via_hub.returncode == 0, via_hub.stderr
    direct = _cli("finetune", str(ckpt), *args)
    assert direct.returncode == 0, direct.stderr
    hub_res, ckpt_res = json.loads(via_hub.stdout), json.loads(direct.stdout)
    assert len({r["task"] for r in hub_res["results"]}) == 5  # every task of the embedded suite
    assert hub_res["results"] == ckpt_res["results"]
    missing = _cli("finetune", "hf:test/not-cached", *args, env=env)
    assert missing.returncode == 2 and "not in the local Hugging Face cache" in missing.stderr
    assert missing.stderr.count("\n") == 1


# ---- fine-tuning: the tool's loop against a plain transformers loop ------------------------------------------

# Measured (this test, 2026-12-04, 2-core AMD EPYC, torch 2.13 CPU, transformers 5.25, fp32): the two loops'
# dev outputs differ by at most 7.5e-7 of their scale after 24 steps, and fine-tuning moved them by far more
# (asserted); the bound leaves room for other BLAS builds, not for a different recipe.
FINETUNE_TOL = 1e-3


def test_finetune_matches_a_plain_transformers_loop(tmp_path, tokenizer):
    """The tool fine-tunes an exported checkpoint's encoder; a plain loop written against transformers'
    ElectraModel with the same recipe (AdamW, layer-wise decay, warm-up and linear decay, clipping), the same
    initial head, seed and data order agrees with it."""
    import math

    import numpy as np

    from electra_bench.data.task_sources import load_tasks
    from electra_bench.score.finetune import Recipe, fit_classifier, initial_classifier, score_classifier

    ckpt, m = make_checkpoint(tmp_path / "run", "rtd", small_preset(tokenizer, 32), tokenizer)
    export(ckpt, tmp_path / "hf")
    task = load_tasks(None, ["rt-polarity"])[0]
    recipe = Recipe(protocol="fewshot", lr=3e-4, layerwise_lr_decay=0.8, fewshot_examples=256, max_len=64)
    seed = 1
    state = {k: v.clone() for k, v in m.backbone().state_dict().items()}
    tool = fit_classifier(state, m.backbone().cfg, task, tokenizer, recipe, seed, "cpu")
    tool_metrics, tool_out = score_classifier(tool, task, tokenizer, recipe, "dev", "cpu")

    # --- the plain loop: transformers' model and tokenizer, a head, AdamW; nothing of electra-bench's loop
    head0 = initial_classifier(state, m.backbone().cfg, 2, seed)  # the head this seed starts from
    electra = ElectraModel.from_pretrained(tmp_path / "hf")
    auto = AutoTokenizer.from_pretrained(tmp_path / "hf")
    pooler, classifier = torch.nn.Linear(64, 64), torch.nn.Linear(64, 2)
    pooler.load_state_dict(head0.pooler.state_dict())
    classifier.load_state_dict(head0.classifier.state_dict())
    model = torch.nn.ModuleDict({"electra": electra, "pooler": pooler, "classifier": classifier})

    def logits(texts):
        enc = auto(texts, truncation=True, max_length=recipe.max_len, padding=True, return_tensors="pt")
        cls = electra(**enc).last_hidden_state[:, 0]
        return classifier(torch.tanh(pooler(cls)))

    L = electra.config.num_hidden_layers
    groups = {}
    for name, p in model.named_parameters():
        depth = (0 if name.startswith(("electra.embeddings", "electra.embeddings_project")) else
                 int(name.split(".")[3]) + 1 if name.startswith("electra.encoder.layer.") else L + 2)
        lr = recipe.lr * recipe.layerwise_lr_decay ** (L + 2 - depth)
        wd = recipe.weight_decay if p.ndim >= 2 else 0.0
        groups.setdefault((lr, wd), []).append(p)
    opt = torch.optim.AdamW([{"params": ps, "lr": lr, "base": lr, "weight_decay": wd}
                             for (lr, wd), ps in groups.items()], eps=1e-6)
    train_all = task.splits["train"]
    pick = np.sort(np.random.default_rng([seed + 1, 7]).choice(len(train_all), 256, replace=False))
    train = [train_all[i] for i in pick]
    total = 3 * math.ceil(len(train) / 32)
    order_rng = np.random.default_rng([seed, 11])
    step = 0
    model.train()
    for _ in range(3):
        order = order_rng.permutation(len(train))
        for i in range(0, len(train), 32):
            examples = [train[j] for j in order[i:i + 32]]
            warm = min(1.0, (step + 1) / (0.1 * total))
            for g in opt.param_groups:
                g["lr"] = g["base"] * warm * max(0.0, 1 - step / total)
            loss = F.cross_entropy(logits([ex.text_a for ex in examples]), torch.tensor([ex.label for ex in examples]))
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            step += 1
    model.eval()
    dev = task.splits["dev"]
    with torch.no_grad():
        plain_out = torch.cat([logits([ex.text_a for ex in dev[i:i + 128]]) for i in range(0, len(dev), 128)])
    diff = close(torch.from_numpy(tool_out), plain_out)
    _, before = score_classifier(head0.eval(), task, tokenizer, recipe, "dev", "cpu")
    assert close(torch.from_numpy(before), plain_out) > 100 * FINETUNE_TOL  # the loops did train
    plain_acc = 100 * float((plain_out.argmax(-1) == torch.tensor([ex.label for ex in dev])).float().mean())
    print(f"fine-tune agreement: dev outputs max diff {diff:.2e} of scale; accuracy tool "
          f"{tool_metrics['accuracy']:.2f} plain {plain_acc:.2f}")
    assert diff < FINETUNE_TOL
    assert abs(tool_metrics["accuracy"] - plain_acc) < 0.11  # at most one dev example either way


# ---- reference points ---------------------------------------------------------------------------------------

FIXTURE_RUN = Path(__file__).resolve().parent / "fixtures" / "runs" / "compare-tiny-quick-dcf2017d"


def test_reference_spec_parsing():
    from electra_bench.summarise.references import parse, parse_all

    r = parse("ELECTRA-Small=hf:google/electra-small-discriminator@1.4e18")
    assert (r.label, r.source, r.train_flops) == ("ELECTRA-Small", "hf:google/electra-small-discriminator", 1.4e18)
    assert parse("mine = results/x/checkpoints/frac-1.0000").train_flops is None
    for bad in ("no-equals-sign", "x=y@-3", "=src@1e3"):
        with pytest.raises(BenchError, match="--reference"):
            parse(bad)
    with pytest.raises(BenchError, match="labels must differ"):
        parse_all(["a=x@1", "a=y@2"])


def test_report_reference_is_scored_stored_shown_and_resumed(tmp_path, tokenizer):
    """`report RUN --reference`: the external model is scored with the run's suite, protocol, probe sizes
    and seeds, stored in references.jsonl, shown in the table and on the plot at its stated FLOPs, never in
    the curves or the verdict; a second call scores nothing."""
    import shutil

    from electra_bench.experiments.references import add_to_run
    from electra_bench.present import plots
    from electra_bench.store.runs import load_run
    from electra_bench.summarise.summary import build_summary

    ckpt, _ = make_checkpoint(tmp_path / "ref", "rtd", small_preset(tokenizer, 32), tokenizer)
    export(ckpt, tmp_path / "hf")
    run_dir = tmp_path / "run"
    shutil.copytree(FIXTURE_RUN, run_dir)
    from electra_bench.data.task_sources import load_tasks

    before = build_summary(load_run(run_dir), {t.spec.name: t.spec for t in load_tasks(None, None)}, "measured")
    n = add_to_run(run_dir, [f"tiny-ref={tmp_path / 'hf'}@3e12"], device="cpu")
    config = json.loads((run_dir / "config.json").read_text())
    rows = [json.loads(line) for line in (run_dir / "references.jsonl").read_text().splitlines()]
    assert n == len(rows) > 0
    assert {r["task"] for r in rows} == {t for t in before["protocols"]["probe"]["tasks"]}
    assert {r["seed"] for r in rows} == set(range(config["seeds"])) and {r["protocol"] for r in rows} == {"probe"}
    summary = json.loads((run_dir / "summary.json").read_text())
    block = summary["protocols"]["probe"]
    (ref,) = block["references"]
    assert ref["label"] == "tiny-ref" and ref["train_flops"] == 3e12 and ref["score"]["value"] is not None
    for key in ("points", "verdict", "headline"):  # the reference is beside the curves, not in them
        assert block[key] == before["protocols"]["probe"][key]
    assert "tiny-ref (reference)" in (run_dir / "report.md").read_text()
    fig = plots.figure_scores(summary)
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any(t.startswith("tiny-ref (reference, 3e+12 FLOPs as stated)") for t in texts)
    assert not plots.text_overlaps(fig)
    assert add_to_run(run_dir, [f"tiny-ref={tmp_path / 'hf'}@3e12"], device="cpu") == 0  # resumed: nothing new
    with pytest.raises(BenchError, match="another label"):
        add_to_run(run_dir, [f"tiny-ref={tmp_path / 'hf'}@9e12"], device="cpu")


def test_calibration_scores_what_is_cached_and_skips_the_rest(tmp_path, tokenizer):
    """scripts/calibrate.py: a model in the local HF cache is fine-tuned on GLUE dev by the tool and put
    beside the paper's number; one that is not cached is skipped, never downloaded."""
    import os

    from test_data_glue import write_official

    ckpt, _ = make_checkpoint(tmp_path / "run", "rtd", small_preset(tokenizer, 32), tokenizer)
    export(ckpt, tmp_path / "hf")
    cache = fake_hub_cache(tmp_path / "hub", {"google/electra-small-discriminator": tmp_path / "hf"})
    glue = tmp_path / "glue"
    write_official(glue)
    script = Path(__file__).resolve().parent.parent / "scripts" / "calibrate.py"
    r = subprocess.run([sys.executable, str(script), "--data", str(glue), "--tasks", "cola,sst2", "--seeds", "1",
                        "--device", "cpu", "--out", str(tmp_path / "cal")], capture_output=True, text=True,
                       env={**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}, timeout=600)
    assert r.returncode == 0, r.stderr
    result = json.loads((tmp_path / "cal" / "calibration.json").read_text())
    electra, bert = result["models"]
    assert electra["status"] == "ok" and set(electra["per_task"]) == {"cola", "sst2"}
    assert electra["glue"] is None and "rte" in electra["missing_tasks"] and electra["paper_glue"] == 79.9
    assert bert["status"].startswith("skipped") and "not in the local Hugging Face cache" in bert["status"]
    assert "| ELECTRA-Small | ok, 1 seeds |" in r.stdout
