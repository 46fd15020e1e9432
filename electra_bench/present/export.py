"""`electra-bench export`: a pre-training checkpoint as a folder transformers loads offline.

What is written (docs/interop.md has the table):
- RTD (and ELECTRA 15%): the discriminator as `ElectraForPreTraining` at the top (so `ElectraModel` and
  `ElectraForSequenceClassification` load it too), the generator as `ElectraForMaskedLM` in `generator/`
  (none for a uniform generator, which has no weights);
- MLM: `BertForMaskedLM`, or `ElectraForMaskedLM` when the embedding size differs from the hidden size
  (BERT has no embedding projection);
- Replace MLM and All-Tokens MLM: their kept encoder as `ElectraModel` (All-Tokens MLM's copy head has
  no transformers equivalent, and neither ablation's head is what the paper fine-tunes);
- GDES (`--embedding-sharing gdes`): the discriminator's embeddings sg(E_G) + E_delta are folded into one
  plain table, exactly as the checkpoint's kept encoder already stores them.
Each folder has config.json, model.safetensors under transformers' names, the tokenizer files that
`AutoTokenizer` reads (giving the tool's ids), and a model card (README.md) with the run's facts.
A checkpoint written before objective.safetensors existed exports its kept encoder alone.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import torch

from ..store import atomic_io

from ..data.tokenizer import Tokenizer
from ..errors import BenchError
from ..flops import step_flops
from ..store.layout import RunLayout, checkpoint_tokenizer
from ..model import Encoder, count_parameters
from ..run_config import RunConfig
from ..store.provenance import git_state
from ..store.runs import load_run
from ..pretrain import checkpoint
from ..interop import hf_import, hf_names

GENERATOR_DIR = "generator"
EXPORT_FACTS = hf_import.EXPORT_FACTS


def checkpoint_of_run(run_dir: str | Path, objective: str, seed: int, fraction: float) -> Path:
    """The checkpoint directory of (objective, pre-training seed, budget fraction) in a compare-layout run."""
    ckpt = RunLayout(run_dir).pretrain(objective, seed).checkpoint(fraction)
    if not (ckpt / "checkpoint.json").is_file():
        raise BenchError(f"{ckpt}: no checkpoint for objective {objective}, seed {seed}, fraction {fraction:g} "
                         f"in {run_dir}")
    return ckpt


def _write_folder(folder: Path, arch: str, encoder: Encoder, head: str | None, head_module, tokenizer: Tokenizer,
                  seq_len: int, card: str, facts: dict) -> None:
    model_type, head_kind = hf_names.ARCHITECTURES[arch]
    assert head_kind == head
    state = hf_names.encoder_to_hf(checkpoint.unique_state(encoder), model_type)
    if head is not None:
        state.update(hf_names.head_to_hf(head_module.state_dict(), head, encoder.embeddings.word.weight))
    else:  # a bare ElectraModel/BertModel is saved without its prefix, as transformers saves it
        state = {k.split(".", 1)[1]: v for k, v in state.items()}
    folder.mkdir(parents=True, exist_ok=True)
    checkpoint.write_tensors(folder / "model.safetensors", {k: v.detach().float().contiguous() for k, v in state.items()},
                             metadata=hf_names.SAFETENSORS_METADATA)
    atomic_io.write_json(folder / "config.json",
                         hf_names.hf_config(encoder.cfg, model_type, arch, tokenizer.special.pad))
    tokenizer_class = "ElectraTokenizer" if model_type == "electra" else "BertTokenizer"
    tokenizer.save_hf(folder, model_max_length=min(seq_len, encoder.cfg.max_positions), tokenizer_class=tokenizer_class)
    atomic_io.write_text(folder / "README.md", card)
    atomic_io.write_json(folder / EXPORT_FACTS, facts)


def _parts(objective: str, module, kept: Encoder) -> list[tuple[str, str, Encoder, str | None, object]]:
    """(sub-folder, architecture, encoder, head kind, head module) of each model to write."""
    if module is None:  # an old checkpoint: the kept encoder alone
        bare = "BertModel" if objective == "mlm" and kept.cfg.embedding_size == kept.cfg.hidden_size else "ElectraModel"
        return [("", bare, kept, None, None)]
    if objective == "mlm":
        if kept.cfg.embedding_size == kept.cfg.hidden_size:
            return [("", "BertForMaskedLM", kept, "bert_mlm", module.head)]
        return [("", "ElectraForMaskedLM", kept, "electra_mlm", module.head)]
    if objective in ("rtd", "rtd-15"):
        parts = [("", "ElectraForPreTraining", kept, "discriminator", module.disc_head)]
        if isinstance(module.generator, Encoder):  # a uniform generator has no weights to export
            parts.append((GENERATOR_DIR, "ElectraForMaskedLM", module.generator, "electra_mlm", module.gen_head))
        return parts
    return [("", "ElectraModel", kept, None, None)]  # replace-mlm, alltokens-mlm: the kept encoder


def export(ckpt_dir: str | Path, out_dir: str | Path, *, overwrite: bool = False) -> dict:
    """Write `ckpt_dir` (a checkpoints/frac-F directory) as a transformers folder `out_dir`; returns what
    was written. The folder is built beside `out_dir` and renamed into place: never half-written."""
    ckpt, out = Path(ckpt_dir), Path(out_dir)
    meta = checkpoint.verify_checkpoint(ckpt)
    if out.exists() and (not out.is_dir() or any(out.iterdir())) and not overwrite:
        raise BenchError(f"{out}: exists and is not empty; choose another --out or pass --overwrite")
    tokenizer = Tokenizer.load(checkpoint_tokenizer(ckpt, meta))
    preset = checkpoint.run_preset(ckpt)
    kept, _ = checkpoint.load_encoder(ckpt)
    kept.eval()
    module = checkpoint.load_objective(ckpt, preset, tokenizer.special)
    objective = meta["objective"]
    parts = _parts(objective, module, kept)
    facts = card_facts(ckpt, meta, preset, tokenizer)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        for sub, arch, encoder, head, head_module in parts:
            _write_folder(tmp / sub if sub else tmp, arch, encoder, head, head_module, tokenizer,
                          preset.schedule.seq_len, model_card(facts, arch, encoder, sub, [p[1] for p in parts]), facts)
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return {"out": str(out), "checkpoint": str(ckpt), "objective": objective,
            "models": [{"folder": str(out / sub) if sub else str(out), "architecture": arch} for sub, arch, *_ in parts],
            "card": facts}


# ---- the model card -------------------------------------------------------------------------------------


def card_facts(ckpt: Path, meta: dict, preset: RunConfig, tokenizer: Tokenizer) -> dict:
    """What a model card states, read from the checkpoint, its pre-training run and (when the run is part
    of a compare run) the suite scores and provenance stored there."""
    root = checkpoint.pretrain_root(ckpt)
    run_info = json.loads((root / "run.json").read_text())
    step = int(meta["step"])
    flops = {}
    for convention in ("measured", "paper"):
        flops[convention] = (float(meta["train_flops"]) if convention == meta.get("convention")
                             else step_flops(preset, meta["objective"], convention).flops_per_step * step)
    return {
        "preset": meta.get("preset"), "objective": meta["objective"], "seed": meta.get("seed"),
        "fraction": meta.get("fraction"), "step": step, "total_steps": run_info.get("plan", {}).get("total_steps"),
        "train_flops": flops, "data": run_info.get("data", {}), "tokenizer_sha256": tokenizer.sha256,
        "diagnostics": _diagnostics_at(root / "log.jsonl", step), "scores": _suite_scores(root, meta),
        "commit": _commit(root), "convention": meta.get("convention", "measured"), "seq_len": preset.schedule.seq_len,
        "finetune_lr": preset.evaluation.finetune_lr, "layerwise_lr_decay": preset.evaluation.layerwise_lr_decay,
    }


def _diagnostics_at(log: Path, step: int) -> dict:
    """The held-out learning diagnostics logged last at or before `step`."""
    if not log.is_file():
        return {}
    rows = [r for r in atomic_io.read_jsonl(log) if r.get("step", -1) <= step and any(k.startswith("diag/") for k in r)]
    if not rows:
        return {}
    last = rows[-1]
    return {"step": last["step"], **{k[len("diag/"):]: v for k, v in last.items() if k.startswith("diag/")}}


def _compare_run(root: Path) -> Path | None:
    run = RunLayout.of_pretrain(root)
    return run if RunLayout(run).config.is_file() and RunLayout(run).scores.is_file() else None


def _suite_scores(root: Path, meta: dict) -> dict:
    """Median over evaluation seeds per task (and the suite's task list) at this checkpoint, when the
    compare run it belongs to scored it."""
    run_dir = _compare_run(root)
    if run_dir is None:
        return {}
    scores = load_run(run_dir).scores()
    if scores.empty:
        return {}
    rows = scores[(scores.objective == meta["objective"]) & (scores.pretrain_seed == meta.get("seed", 0))
                  & ((scores.fraction - float(meta.get("fraction", -1))).abs() < 1e-9)]
    if rows.empty:
        return {}
    per = rows.groupby(["task", "metric"])["value"].median()
    return {"protocol": str(rows.protocol.iloc[0]), "n_eval_seeds": int(rows.seed.nunique()),
            "median": {f"{t}/{m}": float(v) for (t, m), v in per.items()}}


def _commit(root: Path) -> dict:
    run_dir = _compare_run(root)
    if run_dir is not None and (run_dir / "provenance.json").is_file():
        git = json.loads((run_dir / "provenance.json").read_text()).get("git")
        if git:
            return {**git, "from": "the compare run's provenance"}
    return {**git_state(), "from": "the checkout that exported it (the run records none)"}


def model_card(facts: dict, arch: str, encoder: Encoder, sub: str, architectures: list[str]) -> str:
    f = facts
    what = "the generator" if sub else ("the discriminator" if arch == "ElectraForPreTraining" else "the kept encoder")
    lines = [
        "---", "library_name: transformers", "tags: [electra-bench, " + ("electra" if "Electra" in arch else "bert") + "]", "---",
        f"# {f['preset']} {f['objective']} (seed {f['seed']}, {f['fraction']:.4g} of its budget): {what}", "",
        f"Pre-trained by electra-bench and exported as `{arch}` "
        f"({count_parameters(encoder):,} encoder parameters). Load it offline:", "",
        "```python", "from transformers import AutoTokenizer, " + arch,
        f'model = {arch}.from_pretrained("PATH")', 'tokenizer = AutoTokenizer.from_pretrained("PATH")', "```", "",
        "| fact | value |", "|---|---|",
        f"| preset | {f['preset']} |", f"| objective | {f['objective']} |",
        f"| pre-training seed | {f['seed']} |",
        f"| step | {f['step']} of {f['total_steps']} (budget fraction {f['fraction']:.4g}) |",
        f"| training FLOPs, measured convention | {f['train_flops']['measured']:.4g} |",
        f"| training FLOPs, paper convention | {f['train_flops']['paper']:.4g} |",
        f"| corpus sha256 | `{f['data'].get('corpus_sha256', 'unknown')}` |",
        f"| tokenizer sha256 | `{f['tokenizer_sha256']}` |",
        f"| git commit | `{f['commit'].get('commit')}` (dirty: {f['commit'].get('dirty')}; {f['commit'].get('from')}) |",
        f"| models in this export | {', '.join(architectures)} |",
    ]
    diag = f["diagnostics"]
    if diag:
        lines += ["", f"Learning diagnostics on the held-out set at step {diag['step']}:", "",
                  "| diagnostic | value |", "|---|---|"]
        lines += [f"| {k} | {v:.4g} |" for k, v in sorted(diag.items()) if k != "step" and isinstance(v, (int, float))]
    scores = f["scores"]
    if scores:
        lines += ["", f"Suite scores at this checkpoint ({scores['protocol']}, median of {scores['n_eval_seeds']} "
                      f"evaluation seeds):", "", "| task/metric | score |", "|---|---|"]
        lines += [f"| {k} | {v:.2f} |" for k, v in sorted(scores["median"].items())]
    else:
        lines += ["", "No suite scores are stored for this checkpoint (it was not part of a scored compare run)."]
    return "\n".join(lines) + "\n"
