"""Load a transformers BERT/ELECTRA encoder into our `Encoder`, with its own tokenizer.

Sources: a local folder that `save_pretrained` wrote (config.json, model.safetensors or a sharded
model.safetensors.index.json, and the tokenizer files), or `hf:NAME` for a hub id already in the local
Hugging Face cache (read with `local_files_only`: nothing is ever downloaded here). Weights are read from
safetensors; a folder that has only `pytorch_model.bin` is read through transformers when it is installed
(its loader does not unpickle arbitrary objects), else refused with the command that converts it.

What our encoder cannot compute exactly is refused in one line (hf_names.encoder_config_from_hf and
encoder_from_hf): other model types, activations, position schemes, unknown tensors.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch

from .. import presets, run_config
from ..data.tokenizer import Tokenizer
from ..errors import BenchError
from ..store import atomic_io
from ..model import Encoder, EncoderConfig
from ..pretrain.checkpoint import read_tensors
from . import hf_names

HF_PREFIX = "hf:"
# what `export` knows of the run behind a folder it wrote (the model card's facts, as JSON): read back, so
# that scoring an exported folder reports its objective and training FLOPs
EXPORT_FACTS = "electra_bench_export.json"


@dataclass
class ExternalModel:
    encoder: Encoder
    tokenizer: Tokenizer
    meta: dict  # what scoring reads: name, source, recipe fields (seq_len, finetune_lr, layerwise_lr_decay)
    state: dict[str, torch.Tensor]  # every tensor as stored, under transformers' names (heads included)


def is_hf_source(source: str | Path) -> bool:
    """Whether `source` names a transformers model (hf:NAME, or a folder with a BERT/ELECTRA config.json)
    rather than an electra-bench checkpoint (checkpoint.json)."""
    s = str(source)
    if s.startswith(HF_PREFIX):
        return True
    d = Path(s)
    return (d / "config.json").is_file() and not (d / "checkpoint.json").is_file()


def resolve_folder(source: str | Path) -> Path:
    """The local folder of `source`: itself, or hf:NAME's snapshot in the local HF cache."""
    s = str(source)
    if not s.startswith(HF_PREFIX):
        d = Path(s)
        if not d.is_dir():
            raise BenchError(f"{d}: no such model folder")
        return d
    name = s[len(HF_PREFIX):]
    if not name:
        raise BenchError("hf: needs a model id, e.g. hf:google/electra-small-discriminator")
    try:
        from huggingface_hub import snapshot_download
    except ImportError:  # pragma: no cover - tokenizers depends on it
        raise BenchError(f"{s}: reading the Hugging Face cache needs huggingface_hub (pip install huggingface_hub)") from None
    try:
        return Path(snapshot_download(name, local_files_only=True))
    except Exception as e:  # LocalEntryNotFoundError, or a malformed id: both mean "not here"
        raise BenchError(f"{s}: not in the local Hugging Face cache ({type(e).__name__}); download it once "
                         f"where there is internet (huggingface-cli download {name}), or pass a local folder") from None


def read_config(folder: Path) -> dict:
    path = folder / "config.json"
    if not path.is_file():
        raise BenchError(f"{folder}: no config.json (expected a transformers model folder)")
    return atomic_io.read_json(path, "config.json", object_only=True)


def read_weights(folder: Path) -> dict[str, torch.Tensor]:
    """Every tensor of the folder's model, from model.safetensors or its shards."""
    single, index = folder / "model.safetensors", folder / "model.safetensors.index.json"
    if single.is_file():
        return read_tensors(single)
    if index.is_file():
        try:
            files = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        except (ValueError, KeyError, TypeError) as e:
            raise BenchError(f"{index}: not a safetensors index ({e})") from None
        state: dict[str, torch.Tensor] = {}
        for f in files:
            state.update(read_tensors(folder / f))
        return state
    if (folder / "pytorch_model.bin").is_file():
        try:
            from transformers import AutoModel
        except ImportError:
            raise BenchError(f"{folder}: only pytorch_model.bin (a pickle, which electra-bench never unpickles); "
                             f"convert it once with transformers: AutoModel.from_pretrained(DIR)."
                             f"save_pretrained(DIR) writes model.safetensors") from None
        model = AutoModel.from_pretrained(str(folder), local_files_only=True)
        return {k: v.detach().clone() for k, v in model.state_dict().items()}
    raise BenchError(f"{folder}: no model.safetensors (or index, or pytorch_model.bin)")


def recipe_meta(cfg: EncoderConfig) -> dict:
    """The fine-tuning recipe's fields for an external encoder: the paper preset of the same shape
    (hidden size and depth) lends its learning rate and layer-wise decay (ELECTRA's Table 7), else our
    defaults; inputs up to 128 tokens, as every paper recipe."""
    for name in ("small", "base", "large"):
        p = presets.get(name)
        if (p.model.encoder.hidden_size, p.model.encoder.num_layers) == (cfg.hidden_size, cfg.num_layers):
            return {"finetune_lr": p.evaluation.finetune_lr, "layerwise_lr_decay": p.evaluation.layerwise_lr_decay,
                    "seq_len": cfg.max_positions, "recipe_from": f"preset {name} (same hidden size and depth)"}
    return {"finetune_lr": run_config.FINETUNE_LR, "layerwise_lr_decay": run_config.LAYERWISE_LR_DECAY,
            "seq_len": cfg.max_positions, "recipe_from": "electra-bench's default (no paper preset of this shape)"}


def load_external(source: str | Path) -> ExternalModel:
    """An external BERT/ELECTRA encoder as our Encoder (bit-identical weights), its tokenizer, and meta."""
    folder = resolve_folder(source)
    config = read_config(folder)
    where = str(folder / "config.json")
    cfg = hf_names.encoder_config_from_hf(config, where)
    state = read_weights(folder)
    ours = hf_names.encoder_from_hf(state, config["model_type"], str(folder))
    with torch.device("meta"):  # no random init to overwrite: every tensor comes from the file
        encoder = Encoder(cfg)
    encoder = encoder.to_empty(device="cpu")
    missing, unexpected = encoder.load_state_dict(ours, strict=False)
    if missing or unexpected:
        raise BenchError(f"{folder}: weights do not match its config.json (missing {missing[:3]}, unexpected "
                         f"{unexpected[:3]})")
    tokenizer = Tokenizer.from_hf(folder)
    if tokenizer.vocab_size > cfg.vocab_size:
        raise BenchError(f"{folder}: the tokenizer has {tokenizer.vocab_size} tokens, the model's vocab_size is "
                         f"{cfg.vocab_size}")
    arch = (config.get("architectures") or ["?"])[0]
    meta = {"objective": "external", "source": str(source), "folder": str(folder), "architecture": arch,
            "model_type": config["model_type"], "encoder": cfg.__dict__, **recipe_meta(cfg)}
    facts_file = folder / EXPORT_FACTS
    if facts_file.is_file():  # exported by electra-bench: the run's own recipe and FLOPs
        facts = json.loads(facts_file.read_text())
        meta.update({"objective": facts["objective"], "train_flops": facts["train_flops"][facts["convention"]],
                     "convention": facts["convention"], "seq_len": facts["seq_len"],
                     "finetune_lr": facts["finetune_lr"], "layerwise_lr_decay": facts["layerwise_lr_decay"],
                     "recipe_from": "the exporting run's preset"})
    return ExternalModel(encoder, tokenizer, meta, state)
