"""Our encoder and heads under transformers' names and configs, both ways: pure functions on state dicts.

Our `Encoder` is the post-LN BERT/ELECTRA encoder of transformers' `BertModel` and `ElectraModel`
(tests/test_interop.py checks equal outputs): the same embeddings (word + absolute position + token type,
LayerNorm), ELECTRA's E -> H projection when the embedding size differs from the hidden size, and the same
blocks. Two differences are only of layout: one fused (3H, H) q/k/v matmul where transformers has three
(H, H) ones (rows q, then k, then v: split and concatenated exactly), and module names.

    ours                          transformers (prefix `electra.` / `bert.`)
    embeddings.word               embeddings.word_embeddings
    embeddings.position           embeddings.position_embeddings
    embeddings.segment            embeddings.token_type_embeddings
    embeddings.norm               embeddings.LayerNorm
    embed_proj                    embeddings_project                      (ELECTRA only, E != H)
    layers.i.attn.qkv             encoder.layer.i.attention.self.{query,key,value}
    layers.i.attn.out             encoder.layer.i.attention.output.dense
    layers.i.attn_norm            encoder.layer.i.attention.output.LayerNorm
    layers.i.ffn_in               encoder.layer.i.intermediate.dense
    layers.i.ffn_out              encoder.layer.i.output.dense
    layers.i.ffn_norm             encoder.layer.i.output.LayerNorm

Heads: `DiscriminatorHead` is `ElectraForPreTraining.discriminator_predictions` (dense, dense_prediction);
`MaskedLMHead` is `ElectraForMaskedLM.generator_predictions` + `generator_lm_head` (E != H allowed) or
`BertForMaskedLM.cls.predictions` (E == H), its decoder tied to the word embeddings.
"""

from __future__ import annotations

import re

import torch

from ..errors import BenchError
from ..model import EncoderConfig

# transformers' model classes by what they hold: the encoder's prefix and the head
ARCHITECTURES = {
    "ElectraForPreTraining": ("electra", "discriminator"),
    "ElectraForMaskedLM": ("electra", "electra_mlm"),
    "ElectraModel": ("electra", None),
    "BertForMaskedLM": ("bert", "bert_mlm"),
    "BertModel": ("bert", None),
}

_EMBEDDINGS = {"word": "word_embeddings", "position": "position_embeddings", "segment": "token_type_embeddings",
               "norm": "LayerNorm"}
_BLOCK = {"attn.out": "attention.output.dense", "attn_norm": "attention.output.LayerNorm",
          "ffn_in": "intermediate.dense", "ffn_out": "output.dense", "ffn_norm": "output.LayerNorm"}
_HEADS = {
    "discriminator": {"dense": "discriminator_predictions.dense", "out": "discriminator_predictions.dense_prediction"},
    "electra_mlm": {"transform": "generator_predictions.dense", "norm": "generator_predictions.LayerNorm"},
    "bert_mlm": {"transform": "cls.predictions.transform.dense", "norm": "cls.predictions.transform.LayerNorm"},
}
_MLM_BIAS = {"electra_mlm": ["generator_lm_head.bias"], "bert_mlm": ["cls.predictions.bias", "cls.predictions.decoder.bias"]}
_MLM_DECODER = {"electra_mlm": "generator_lm_head.weight", "bert_mlm": "cls.predictions.decoder.weight"}
# what transformers' models hold besides the encoder and the head we map: pooler (BERT's NSP-trained
# [CLS] transform, which our fine-tuning does not use) and buffers
_IGNORED = re.compile(r"(^|\.)(pooler\.|embeddings\.position_ids$|embeddings\.token_type_ids$)")


def _split_qkv(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return tuple(c.clone() for c in t.chunk(3, dim=0))  # rows: q, k, v (model.SelfAttention)


def encoder_to_hf(state: dict[str, torch.Tensor], prefix: str) -> dict[str, torch.Tensor]:
    """Our Encoder's state dict -> transformers' names under `prefix` ("electra" or "bert")."""
    out: dict[str, torch.Tensor] = {}
    for name, t in state.items():
        if name.startswith("embeddings."):
            part, leaf = name[len("embeddings."):].split(".", 1)
            out[f"{prefix}.embeddings.{_EMBEDDINGS[part]}.{leaf}"] = t
        elif name.startswith("embed_proj."):
            if prefix != "electra":
                raise BenchError("an encoder whose embedding size differs from its hidden size has no BERT "
                                 "equivalent (BertModel has no embedding projection); it is exported as ELECTRA")
            out[f"{prefix}.embeddings_project.{name.split('.', 1)[1]}"] = t
        else:
            m = re.fullmatch(r"layers\.(\d+)\.(.+)\.(weight|bias)", name)
            if not m:
                raise BenchError(f"no transformers name for encoder tensor {name!r}")
            i, module, leaf = m.groups()
            base = f"{prefix}.encoder.layer.{i}."
            if module == "attn.qkv":
                for part, chunk in zip(("query", "key", "value"), _split_qkv(t)):
                    out[f"{base}attention.self.{part}.{leaf}"] = chunk
            else:
                out[f"{base}{_BLOCK[module]}.{leaf}"] = t
    return out


def encoder_from_hf(state: dict[str, torch.Tensor], prefix: str, where: str) -> dict[str, torch.Tensor]:
    """transformers' encoder tensors (under `prefix.`, or bare as a saved ElectraModel/BertModel has
    them) -> our Encoder's names. A tensor of the encoder we do not know (relative-position tables,
    pre-LN norms, adapters...) is refused: our encoder could not compute that model."""
    enc_names = {v: k for k, v in _EMBEDDINGS.items()}
    block_names = {v: k for k, v in _BLOCK.items()}
    out: dict[str, torch.Tensor] = {}
    qkv: dict[tuple[str, str], dict[str, torch.Tensor]] = {}
    unknown = []
    for full, t in state.items():
        name = full[len(prefix) + 1:] if full.startswith(prefix + ".") else full
        if _IGNORED.search(name) or _is_head(name):
            continue
        if name.startswith("embeddings_project."):
            out[f"embed_proj.{name.split('.', 1)[1]}"] = t
            continue
        m = re.fullmatch(r"embeddings\.(\w+)\.(weight|bias)", name)
        if m and m.group(1) in enc_names:
            out[f"embeddings.{enc_names[m.group(1)]}.{m.group(2)}"] = t
            continue
        m = re.fullmatch(r"encoder\.layer\.(\d+)\.(.+)\.(weight|bias)", name)
        if m:
            i, module, leaf = m.groups()
            if module.startswith("attention.self.") and module.rsplit(".", 1)[1] in ("query", "key", "value"):
                qkv.setdefault((i, leaf), {})[module.rsplit(".", 1)[1]] = t
                continue
            if module in block_names:
                out[f"layers.{i}.{block_names[module]}.{leaf}"] = t
                continue
        unknown.append(full)
    if unknown:
        raise BenchError(f"{where}: tensors electra-bench's encoder does not compute: {', '.join(unknown[:4])}"
                         f"{' ...' if len(unknown) > 4 else ''} (not a post-LN BERT/ELECTRA encoder)")
    for (i, leaf), parts in qkv.items():
        if set(parts) != {"query", "key", "value"}:
            raise BenchError(f"{where}: layer {i} lacks attention {sorted({'query', 'key', 'value'} - set(parts))}")
        out[f"layers.{i}.attn.qkv.{leaf}"] = torch.cat([parts["query"], parts["key"], parts["value"]], dim=0)
    return out


def _is_head(name: str) -> bool:
    return name.startswith(("discriminator_predictions.", "generator_predictions.", "generator_lm_head.", "cls.",
                            "classifier.", "qa_outputs."))


def head_to_hf(state: dict[str, torch.Tensor], head: str, word_embeddings: torch.Tensor) -> dict[str, torch.Tensor]:
    """A DiscriminatorHead's or MaskedLMHead's state dict (our names: dense/out, transform/norm/bias)
    -> transformers' names for `head` ("discriminator", "electra_mlm", "bert_mlm"). The MLM decoder is
    written out as a copy of the word embeddings (transformers ties it on load; a loader that does not
    tie still computes the same)."""
    out = {}
    for name, t in state.items():
        part, leaf = name.split(".", 1) if "." in name else (name, "")
        if part == "bias" and head in _MLM_BIAS:
            for target in _MLM_BIAS[head]:
                out[target] = t.clone()
        elif part in _HEADS[head]:
            out[f"{_HEADS[head][part]}.{leaf}"] = t
        elif part == "word_embeddings":  # tied to the encoder's table: written as the decoder below
            continue
        else:
            raise BenchError(f"no transformers name for {head} head tensor {name!r}")
    if head in _MLM_DECODER:
        out[_MLM_DECODER[head]] = word_embeddings.clone()
    return out


def head_from_hf(state: dict[str, torch.Tensor], head: str) -> dict[str, torch.Tensor]:
    """transformers' head tensors -> our head's names (the decoder weight is the tied word table)."""
    out = {}
    for part, hf in _HEADS[head].items():
        for leaf in ("weight", "bias"):
            if f"{hf}.{leaf}" in state:
                out[f"{part}.{leaf}"] = state[f"{hf}.{leaf}"]
    if head in _MLM_BIAS:
        out["bias"] = state[_MLM_BIAS[head][0]]
    return out


# ---- configs ---------------------------------------------------------------------------------------------


# The oldest transformers that loads an export, checked in CI (tests/test_transformers4.py) beside the newest
# (tests/test_interop.py): 4.45 is the first 4.x that accepts tokenizers 0.20, which electra-bench needs, so
# no older one installs beside it. config.json names it as `transformers_version` (save_pretrained writes
# its own version there; ours is the oldest version the folder is known to load in).
OLDEST_TRANSFORMERS = "4.45.0"
# What transformers' save_pretrained writes into model.safetensors' header; transformers 4.x refuses a
# file without it (`metadata.get("format")` on None), 5.x does not need it.
SAFETENSORS_METADATA = {"format": "pt"}


def hf_config(cfg: EncoderConfig, model_type: str, architecture: str, pad_token_id: int) -> dict:
    """transformers' config.json for our encoder config: every field that changes the computation."""
    if model_type == "bert" and cfg.embedding_size != cfg.hidden_size:
        raise BenchError("BERT has no embedding projection: an encoder with embedding size != hidden size is ELECTRA")
    d = {
        "architectures": [architecture],
        "model_type": model_type,
        "vocab_size": cfg.vocab_size,
        "hidden_size": cfg.hidden_size,
        "num_hidden_layers": cfg.num_layers,
        "num_attention_heads": cfg.num_heads,
        "intermediate_size": cfg.ffn_size,
        "hidden_act": "gelu",  # the exact (erf) GELU, F.gelu's default, as model.Block
        "hidden_dropout_prob": cfg.dropout,
        "attention_probs_dropout_prob": cfg.dropout,
        "max_position_embeddings": cfg.max_positions,
        "type_vocab_size": cfg.type_vocab_size,
        "layer_norm_eps": cfg.layer_norm_eps,
        "initializer_range": 0.02,
        "position_embedding_type": "absolute",
        "pad_token_id": pad_token_id,
        "tie_word_embeddings": True,
        "transformers_version": OLDEST_TRANSFORMERS,
    }
    if model_type == "electra":
        d["embedding_size"] = cfg.embedding_size
    return d


# Models transformers has that our encoder cannot compute, and the first thing that differs.
_OTHER_MODELS = {
    "roberta": "position ids start after the padding index and there is one token type (RoBERTa)",
    "xlm-roberta": "position ids start after the padding index (XLM-RoBERTa)",
    "camembert": "position ids start after the padding index (CamemBERT)",
    "deberta": "relative positions with disentangled attention (DeBERTa)",
    "deberta-v2": "relative positions with disentangled attention (DeBERTa-v2/v3)",
    "distilbert": "no token-type embeddings and another layer layout (DistilBERT)",
    "albert": "layers share their weights (ALBERT)",
    "mpnet": "relative position buckets (MPNet)",
    "funnel": "pooling between blocks (Funnel Transformer)",
    "megatron-bert": "pre-LN blocks (Megatron-BERT)",
}


def encoder_config_from_hf(config: dict, where: str) -> EncoderConfig:
    """Our EncoderConfig for a transformers config.json of a BERT or ELECTRA encoder; anything our
    encoder would not compute exactly is refused in one line naming what differs."""
    model_type = config.get("model_type")
    if model_type not in ("bert", "electra"):
        why = _OTHER_MODELS.get(model_type, "not a BERT or ELECTRA encoder")
        raise BenchError(f"{where}: model_type {model_type!r} cannot be computed by electra-bench's encoder: {why}")
    act = config.get("hidden_act", "gelu")
    if act != "gelu":
        raise BenchError(f"{where}: hidden_act {act!r}; electra-bench's encoder computes the exact GELU ('gelu') only")
    pos = config.get("position_embedding_type", "absolute")
    if pos != "absolute":
        raise BenchError(f"{where}: position_embedding_type {pos!r}; electra-bench's encoder has absolute "
                         f"positions only")
    if config.get("is_decoder") or config.get("add_cross_attention"):
        raise BenchError(f"{where}: a decoder (is_decoder / add_cross_attention); electra-bench scores encoders")
    try:
        hidden = int(config["hidden_size"])
        cfg = EncoderConfig(
            vocab_size=int(config["vocab_size"]),
            embedding_size=int(config.get("embedding_size", hidden)) if model_type == "electra" else hidden,
            hidden_size=hidden,
            num_layers=int(config["num_hidden_layers"]),
            num_heads=int(config["num_attention_heads"]),
            ffn_size=int(config["intermediate_size"]),
            max_positions=int(config.get("max_position_embeddings", 512)),
            type_vocab_size=int(config.get("type_vocab_size", 2)),
            dropout=float(config.get("hidden_dropout_prob", 0.1)),
            layer_norm_eps=float(config.get("layer_norm_eps", 1e-12)),
        )
    except KeyError as e:
        raise BenchError(f"{where}: config.json lacks {e.args[0]!r}") from None
    except (TypeError, ValueError) as e:
        raise BenchError(f"{where}: config.json has a malformed field ({e})") from None
    if cfg.hidden_size % cfg.num_heads:
        raise BenchError(f"{where}: hidden_size {cfg.hidden_size} is not a multiple of {cfg.num_heads} heads")
    attn_drop = float(config.get("attention_probs_dropout_prob", cfg.dropout))
    if attn_drop != cfg.dropout:
        # one dropout rate serves both places in our encoder; only fine-tuning (training mode) sees it
        raise BenchError(f"{where}: attention dropout {attn_drop} differs from hidden dropout {cfg.dropout}; "
                         f"electra-bench's encoder uses one rate for both")
    return cfg
