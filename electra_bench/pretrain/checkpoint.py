"""Checkpoints in safetensors + JSON: nothing is ever loaded by unpickling.

Two kinds live in a pre-training directory:
- `checkpoints/frac-<f>/`: the kept encoder (MLM's encoder, RTD's discriminator) at a budget fraction,
  `model.safetensors` + `checkpoint.json` (step, exact FLOPs, encoder config); what fine-tuning reads.
- `state/<step>/`: everything needed to resume exactly (all weights, optimizer moments, step), the newest
  one named by `state/latest.json`. A state directory is complete before `latest.json` points at it, and
  `latest.json` is replaced atomically, so a kill at any moment leaves the previous state usable.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save_file

from ..store import atomic_io
from ..errors import BenchError
from .. import objectives
from ..model import Encoder, EncoderConfig
from ..run_config import RunConfig
from ..special_tokens import SpecialIds


def write_tensors(path: Path, tensors: dict[str, torch.Tensor], metadata: dict[str, str] | None = None) -> None:
    """`metadata`: the file header's (an export's {"format": "pt"}); checkpoints are written without."""
    extra = {"metadata": metadata} if metadata else {}
    with atomic_io.atomic_path(path) as tmp:
        save_file({k: v.detach().contiguous().cpu() for k, v in tensors.items()}, str(tmp), **extra)


def unique_state(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    """state_dict without duplicate storage for tied/shared tensors (safetensors refuses aliases)."""
    seen: dict[int, str] = {}
    out = {}
    for name, t in module.state_dict().items():
        key = (t.data_ptr(), t.shape, t.stride()) if t.numel() else name
        if key in seen:
            continue
        seen[key] = name
        out[name] = t
    return out


def read_tensors(path: Path) -> dict[str, torch.Tensor]:
    """A safetensors file's tensors; a missing, truncated or foreign file is a BenchError naming it."""
    if not Path(path).is_file():
        raise BenchError(f"{path}: missing")
    try:
        return load_file(str(path))
    except (SafetensorError, ValueError, RuntimeError) as e:
        raise BenchError(f"{path}: not a readable safetensors file ({str(e).splitlines()[0][:120]}); "
                         f"it was cut short or is not a checkpoint written by electra-bench") from None


def load_into(module: torch.nn.Module, path: Path) -> None:
    load_tensors_into(module, read_tensors(path), str(path))


def load_tensors_into(module: torch.nn.Module, tensors: dict[str, torch.Tensor], where: str) -> None:
    """Load a state stored without duplicate (tied/shared) tensors; anything else missing or unexpected
    is a BenchError naming `where`."""
    missing, unexpected = module.load_state_dict(tensors, strict=False)
    # Shared tensors are stored once; their other names are legitimately "missing" here.
    shared = {n for n in missing if _is_alias(module, n, tensors)}
    missing = [n for n in missing if n not in shared]
    if missing or unexpected:
        raise BenchError(f"{where}: weights do not match the model (missing {missing[:3]}, unexpected {unexpected[:3]})")


def _is_alias(module: torch.nn.Module, name: str, stored: dict) -> bool:
    sd = module.state_dict()
    t = sd[name]
    return any(other in stored and sd[other].data_ptr() == t.data_ptr() for other in sd if other != name)


# ---- fine-tuning checkpoints -------------------------------------------------------------------------


OBJECTIVE_FILE = "objective.safetensors"


def save_encoder(directory: Path, encoder: Encoder, meta: dict, objective: torch.nn.Module | None = None) -> None:
    """The kept encoder (what fine-tuning reads) and, with `objective`, the rest of the objective module
    (heads, generator) in `objective.safetensors`: every tensor of the objective's state not also in
    the encoder, under the objective's own names, so that `export` can write the discriminator's and
    generator's heads. The metadata is written last: a checkpoint without it is incomplete."""
    directory.mkdir(parents=True, exist_ok=True)
    kept = unique_state(encoder)
    write_tensors(directory / "model.safetensors", kept)
    if objective is not None:
        in_encoder = {(t.data_ptr(), t.shape, t.stride()) for t in kept.values() if t.numel()}
        rest = {k: t for k, t in unique_state(objective).items()
                if not t.numel() or (t.data_ptr(), t.shape, t.stride()) not in in_encoder}
        write_tensors(directory / OBJECTIVE_FILE, rest)
    atomic_io.write_json(directory / "checkpoint.json", {**meta, "encoder": encoder.cfg.__dict__})


def read_checkpoint_meta(directory: str | Path) -> dict:
    path = Path(directory) / "checkpoint.json"
    if not path.is_file():
        raise BenchError(f"{directory}: not a checkpoint (expected checkpoint.json and model.safetensors)")
    try:
        meta = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise BenchError(f"{path}:{e.lineno}: malformed checkpoint metadata ({e.msg})") from None
    except UnicodeDecodeError:
        raise BenchError(f"{path}: checkpoint metadata is not UTF-8 text") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("encoder"), dict):
        raise BenchError(f"{path}: checkpoint metadata has no 'encoder' configuration")
    fields = {f.name for f in dataclasses.fields(EncoderConfig)}
    required = {f.name for f in dataclasses.fields(EncoderConfig)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    unknown, missing = set(meta["encoder"]) - fields, required - set(meta["encoder"])
    if unknown or missing:
        raise BenchError(f"{path}: 'encoder' configuration is not this version's (missing {sorted(missing)}, "
                         f"unknown {sorted(unknown)})")
    return meta


def verify_checkpoint(directory: str | Path) -> dict:
    """A checkpoint's metadata, after checking that its weights file is a complete safetensors file
    (header and sizes; the tensors are not read). BenchError naming the file otherwise."""
    meta = read_checkpoint_meta(directory)
    path = Path(directory) / "model.safetensors"
    if not path.is_file():
        raise BenchError(f"{path}: missing")
    try:
        with safe_open(str(path), framework="pt") as f:
            n_keys = len(list(f.keys()))
    except (SafetensorError, ValueError, RuntimeError, OSError) as e:
        raise BenchError(f"{path}: not a readable safetensors file ({str(e).splitlines()[0][:120]})") from None
    if n_keys == 0:
        raise BenchError(f"{path}: holds no tensors")
    return meta


def load_encoder(directory: str | Path) -> tuple[Encoder, dict]:
    """The kept encoder of a checkpoint directory and its metadata."""
    meta = read_checkpoint_meta(directory)
    encoder = Encoder(EncoderConfig(**meta["encoder"]))
    load_into(encoder, Path(directory) / "model.safetensors")
    return encoder, meta


def pretrain_root(ckpt: Path) -> Path:
    """The pre-training directory a kept checkpoint belongs to (checkpoints/frac-F -> its run; layout.py)."""
    return Path(ckpt).resolve().parent.parent


def run_preset(ckpt: Path) -> RunConfig:
    """The resolved config of the pre-training run a checkpoint belongs to (its run.json): what rebuilds
    the whole objective module (export, the zero-shot reading)."""
    run_file = pretrain_root(ckpt) / "run.json"
    try:
        return RunConfig.from_dict(json.loads(run_file.read_text())["preset"])
    except FileNotFoundError:
        raise BenchError(f"{run_file}: missing; the checkpoint's heads need the pre-training run it belongs to") from None
    except BenchError as e:  # a config this version cannot read, or one that fails its checks
        raise BenchError(f"{run_file}: {e}") from None
    except (ValueError, KeyError, TypeError) as e:
        raise BenchError(f"{run_file}: unreadable preset ({type(e).__name__}: {e})") from None


def load_objective(ckpt: Path, preset: RunConfig, special: SpecialIds) -> torch.nn.Module | None:
    """The whole objective module at this checkpoint (heads and generator), in eval mode, or None when the
    checkpoint predates objective.safetensors."""
    ckpt = Path(ckpt)
    rest_file = ckpt / OBJECTIVE_FILE
    if not rest_file.is_file():
        return None
    meta = read_checkpoint_meta(ckpt)
    with torch.device("meta"):
        module = objectives.build(meta["objective"], preset, special)
    module = module.to_empty(device="cpu")
    state = read_tensors(rest_file)
    backbone = module.backbone()
    prefix = next((name for name, child in module.named_children() if child is backbone), None)
    if prefix is not None:  # the kept encoder's tensors live in model.safetensors
        state.update({f"{prefix}.{k}": v for k, v in read_tensors(ckpt / "model.safetensors").items()})
    load_tensors_into(module, state, str(rest_file))
    return module.eval()


# ---- resumable training state ----------------------------------------------------------------------


def save_state(root: Path, step: int, module: torch.nn.Module, optimizer: torch.optim.Optimizer, info: dict) -> None:
    state_dir = root / f"{step:09d}"
    if state_dir.exists():
        shutil.rmtree(state_dir)
    state_dir.mkdir(parents=True)
    write_tensors(state_dir / "model.safetensors", unique_state(module))
    opt = optimizer.state_dict()
    tensors, scalars = {}, {}
    for idx, st in opt["state"].items():
        for k, v in st.items():
            if torch.is_tensor(v):
                tensors[f"{idx}.{k}"] = v
            else:
                scalars[f"{idx}.{k}"] = v
    write_tensors(state_dir / "optimizer.safetensors", tensors)
    atomic_io.write_json(
        state_dir / "state.json", {**info, "step": step, "param_groups": opt["param_groups"], "scalars": scalars}
    )
    atomic_io.write_json(root / "latest.json", {"step": step, "dir": state_dir.name})
    for old in root.iterdir():  # keep only the newest complete state
        if old.is_dir() and old.name != state_dir.name:
            shutil.rmtree(old, ignore_errors=True)


def load_state(root: Path, module: torch.nn.Module, optimizer: torch.optim.Optimizer) -> dict | None:
    """Restore the newest state into module and optimizer; returns its info dict (None when there is none)."""
    latest = root / "latest.json"
    if not latest.is_file():
        return None
    try:
        state_dir = root / json.loads(latest.read_text())["dir"]
        info = json.loads((state_dir / "state.json").read_text())
        info["step"], info["scalars"], info["param_groups"]  # noqa: B018 (what a resume needs)
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise BenchError(f"{root}: the resumable state is unreadable ({type(e).__name__}: {e}); delete "
                         f"{root} to restart this run from its beginning") from None
    load_into(module, state_dir / "model.safetensors")
    tensors = read_tensors(state_dir / "optimizer.safetensors")
    state: dict[int, dict] = {}
    for key, v in tensors.items():
        idx, k = key.split(".", 1)
        state.setdefault(int(idx), {})[k] = v
    for key, v in info["scalars"].items():
        idx, k = key.split(".", 1)
        state.setdefault(int(idx), {})[k] = v
    optimizer.load_state_dict({"state": state, "param_groups": info["param_groups"]})
    return info
