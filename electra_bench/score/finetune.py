"""From a pre-trained encoder to downstream scores.

Three protocols, named in every result:
- `finetune`: the paper's recipe (ELECTRA Table 7): AdamW, layer-wise lr decay, 10% warmup then linear
  decay, batch 32, max length 128, 3 epochs (10 for RTE and STS-B), dropout 0.1, a head on [CLS];
  regression (MSE) for regression tasks.
- `probe`: a linear probe on frozen features, fit with scikit-learn (logistic regression / ridge) on a
  seed-dependent sample of the training split. Features: the mean of the final hidden states over real
  tokens for single sentences; for sentence pairs, InferSent's [u, v, |u - v|, u * v] of the two
  segments' means (a linear model on the plain mean of both cannot compare the sentences, which is what
  pair tasks ask). Cheap and, at CPU-sized budgets, more sensitive to pre-training than fine-tuning.
- `fewshot`: the `finetune` recipe on a seed-dependent sample of `fewshot_examples` training examples.
- `finetune-tuned`: the `finetune` recipe with lr and epochs chosen once per (encoder, task) from a grid on
  a fixed 90/10 cut of the training split (score/tuning.py); its scores carry `tuned_lr` and `tuned_epochs`
  (recorded, never scored). Meant for small presets.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from ..choices import PROTOCOLS, require
from ..data.encoding import encode_examples
from ..errors import BenchError
from ..model import Encoder, SequenceClassifier, has_padding
from ..run_config import FINETUNE_LR, LAYERWISE_LR_DECAY
from ..pretrain import optim
from . import tuning
from .metrics import compute

LONG_TASKS = {"rte": 10, "stsb": 10}  # the paper trains these 10 epochs


@dataclass(frozen=True)
class Recipe:
    protocol: str = "finetune"
    lr: float = FINETUNE_LR
    layerwise_lr_decay: float = LAYERWISE_LR_DECAY
    warmup_fraction: float = 0.1
    batch_size: int = 32
    max_len: int = 128
    epochs: int = 3
    weight_decay: float = 0.01
    probe_pool: int = 3000  # a fixed sample of the training split whose features are computed once
    probe_examples: int = 2000  # drawn from the pool per seed: the probe's seed spread
    max_eval_examples: int | None = None  # cap on dev examples (a fixed sample), for --quick
    fewshot_examples: int = 256
    max_train_examples: int | None = None  # cap for `finetune` on slow machines (None: all)
    # finetune-tuned's selection (score/tuning.py): the grid, and caps on its fitting and held-out parts
    tune_lrs: tuple[float, ...] = (1e-4, 3e-4, 1e-3, 3e-3)
    tune_epochs: tuple[int, ...] = (3, 10)
    tune_max_train: int | None = 2000
    tune_search: str = "coordinate"  # or "grid": every point
    tune_max_heldout: int | None = 2000

    def epochs_for(self, task: str) -> int:
        return LONG_TASKS.get(task.lower().replace("-", ""), self.epochs) if self.epochs == 3 else self.epochs


def _labels_array(examples, regression: bool) -> np.ndarray:
    return np.array([ex.label for ex in examples], dtype=np.float64 if regression else np.int64)


def _sample(n: int, k: int | None, seed: int) -> np.ndarray:
    """A sorted sample of k of n indices for this seed (seed -1: the seed-independent sample)."""
    idx = np.arange(n)
    if k is None or k >= n:
        return idx
    return np.sort(np.random.default_rng([seed + 1, 7]).choice(n, size=k, replace=False))


def dev_sha256(examples, index: np.ndarray, labels: np.ndarray) -> str:
    """sha256 of the scored examples' texts and labels, in scoring order: what a stored prediction array
    belongs to (store/predictions.py)."""
    h = hashlib.sha256()
    for i, y in zip(np.asarray(index).tolist(), np.asarray(labels).tolist()):
        h.update(json.dumps([examples[i].text_a, examples[i].text_b, y]).encode())
    return h.hexdigest()


def _record(record: dict | None, split: str, examples, preds, labels, index) -> None:
    """Keep one split's per-example predictions for `record` (the caller's dict), when one is given."""
    if record is not None:
        record[split] = (np.asarray(preds), labels, np.asarray(index), dev_sha256(examples, index, labels))


def _score(spec, preds: np.ndarray, labels: np.ndarray, split: str) -> dict[str, float]:
    values = compute(list(spec.metrics), preds, labels)
    if len(spec.eval_splits) > 1:  # MNLI: accuracy_matched / accuracy_mismatched
        suffix = split.split("_", 1)[-1]
        values = {f"{k}_{suffix}": v for k, v in values.items()}
    return values


def _eval_splits(task):
    splits = [s for s in task.spec.eval_splits if s in task.splits]
    if not splits:
        raise BenchError(f"task {task.spec.name}: no evaluation split (expected {', '.join(task.spec.eval_splits)})")
    for s in splits:
        if any(ex.label is None for ex in task.splits[s]):
            raise BenchError(f"task {task.spec.name}: split '{s}' has unlabeled examples; it cannot be scored")
    return splits


# ---- linear probe ----------------------------------------------------------------------------------


def _by_length(examples) -> np.ndarray:
    """Order that batches examples of similar length together (far less padding to compute)."""
    return np.argsort([len(ex.text_a) + len(ex.text_b or "") for ex in examples], kind="stable")


def _masked_mean(h: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    m = m[..., None].float()  # (B, T, 1)
    return (h * m).sum(1) / m.sum(1).clamp(min=1)  # (B, H)


def feature_size(hidden_size: int, pairs: bool) -> int:
    return 4 * hidden_size if pairs else hidden_size


@torch.no_grad()
def features(encoder: Encoder, tokenizer, examples, max_len: int, device, batch_size: int = 256,
             pairs: bool | None = None) -> np.ndarray:
    """Probe features in the examples' order: (N, H) means for single sentences, (N, 4H) InferSent
    features of the two segments' means for pairs (see the module docstring)."""
    encoder.eval()
    pairs = any(ex.text_b is not None for ex in examples) if pairs is None else pairs
    out = np.zeros((len(examples), feature_size(encoder.cfg.hidden_size, pairs)), dtype=np.float32)
    order = _by_length(examples)
    parts = []  # kept on the device and copied once at the end: no wait for the device per batch
    for i in range(0, len(examples), batch_size):
        sel = order[i : i + batch_size]
        b = encode_examples(tokenizer, [examples[j] for j in sel], max_len)
        padded = has_padding(b["attention_mask"])  # on the host copy: no device read
        att = b["attention_mask"].to(device)
        seg = b["segment_ids"].to(device)
        h = encoder(b["input_ids"].to(device), seg, att, padded).float()  # (B, T, H)
        if pairs:
            u = _masked_mean(h, att * (seg == 0))  # (B, H)
            v = _masked_mean(h, att * (seg == 1))  # (B, H)
            f = torch.cat([u, v, (u - v).abs(), u * v], dim=-1)  # (B, 4H)
        else:
            f = _masked_mean(h, att)
        parts.append(f)
    if parts:
        out[order] = torch.cat(parts).cpu().numpy()
    return out


def _features_for(cache: dict, key, encoder, tokenizer, examples, idx: np.ndarray, max_len: int, device):
    """Features of examples[idx], computing only those no earlier seed needed."""
    if key not in cache:
        pairs = any(ex.text_b is not None for ex in examples)
        size = feature_size(encoder.cfg.hidden_size, pairs)
        cache[key] = (np.zeros((len(examples), size), np.float32), np.zeros(len(examples), bool))
    feats, done = cache[key]
    missing = idx[~done[idx]]
    if len(missing):
        feats[missing] = features(encoder, tokenizer, [examples[j] for j in missing], max_len, device,
                                  pairs=feats.shape[1] != encoder.cfg.hidden_size)
        done[missing] = True
    return feats[idx]


def probe(encoder: Encoder, task, tokenizer, recipe: Recipe, seed: int, device, cache: dict | None = None,
          record: dict | None = None) -> dict:
    """Fit a linear model on frozen features of a seed-dependent training sample; `cache` keeps
    features across seeds of one checkpoint; `record` receives the per-example predictions per split."""
    # scikit-learn's estimators take ~1 s to import; only the probe needs them
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    spec = task.spec
    cache = cache if cache is not None else {}
    train = task.splits["train"]
    pool = _sample(len(train), recipe.probe_pool, -1)  # seed-independent
    idx = pool[_sample(len(pool), recipe.probe_examples, seed)]
    X = _features_for(cache, (spec.name, "train"), encoder, tokenizer, train, idx, recipe.max_len, device)
    y = _labels_array(train, spec.regression)[idx]
    if spec.regression:
        model = make_pipeline(StandardScaler(), Ridge(alpha=1.0))
    else:
        model = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=2000))
    model.fit(X, y)
    results = {}
    for split in _eval_splits(task):
        examples = task.splits[split]
        ev = _sample(len(examples), recipe.max_eval_examples, -1)
        Xd = _features_for(cache, (spec.name, split), encoder, tokenizer, examples, ev, recipe.max_len, device)
        preds, labels = model.predict(Xd), _labels_array(examples, spec.regression)[ev]
        _record(record, split, examples, preds, labels, ev)
        results.update(_score(spec, preds, labels, split))
    return results


# ---- full fine-tuning ------------------------------------------------------------------------------


def layerwise_param_groups(model: SequenceClassifier, lr: float, decay: float, weight_decay: float):
    """ELECTRA's layer-wise lr decay: depth 0 = embeddings (and E->H projection), layer i = i + 1,
    task head = L + 2; a parameter at depth d gets lr x decay^(L + 2 - d)."""
    L = model.encoder.cfg.num_layers
    groups: dict[tuple[float, float], list] = {}
    for name, p in model.named_parameters():
        if name.startswith("encoder.embeddings") or name.startswith("encoder.embed_proj"):
            depth = 0
        elif name.startswith("encoder.layers."):
            depth = int(name.split(".")[2]) + 1
        else:
            depth = L + 2
        wd = weight_decay if optim.decays(name, p) else 0.0
        groups.setdefault((lr * decay ** (L + 2 - depth), wd), []).append(p)
    return [{"params": ps, "lr": glr, "base_lr": glr, "weight_decay": wd} for (glr, wd), ps in groups.items()]


def training_examples(task, recipe: Recipe, seed: int) -> list:
    """The training examples one fine-tuning seed uses: `fewshot_examples` of them for `fewshot` (a
    seed-dependent sample), all (or `max_train_examples`) for `finetune`."""
    train = task.splits["train"]
    k = recipe.fewshot_examples if recipe.protocol == "fewshot" else recipe.max_train_examples
    return [train[i] for i in _sample(len(train), k, seed)]


def initial_classifier(encoder_state: dict, encoder_cfg, num_labels: int, seed: int) -> SequenceClassifier:
    """The classifier a fine-tuning seed starts from: the encoder's weights and a head drawn under `seed`."""
    torch.manual_seed(seed)
    encoder = Encoder(encoder_cfg)
    encoder.load_state_dict(encoder_state)
    return SequenceClassifier(encoder, num_labels)


def finetune(encoder_state: dict, encoder_cfg, task, tokenizer, recipe: Recipe, seed: int, device,
             record: dict | None = None, epochs: int | None = None) -> dict:
    """Fine-tune a fresh copy of the encoder on one task with one seed; returns dev metrics (and puts the
    per-example predictions per split in `record`, when given)."""
    model = fit_classifier(encoder_state, encoder_cfg, task, tokenizer, recipe, seed, device, epochs=epochs)
    results = {}
    for split in _eval_splits(task):
        metrics, outputs = score_classifier(model, task, tokenizer, recipe, split, device)
        examples = task.splits[split]
        _record(record, split, examples, _predictions(task.spec, outputs),
                _labels_array(examples, task.spec.regression), np.arange(len(examples)))
        results.update(metrics)
    return results


def _predictions(spec, outputs: np.ndarray) -> np.ndarray:
    """A classifier's outputs (N, labels) as what the metrics read: the regression value or the class id."""
    return outputs[:, 0].astype(np.float64) if spec.regression else outputs.argmax(-1)


def fit_classifier(encoder_state: dict, encoder_cfg, task, tokenizer, recipe: Recipe, seed: int, device,
                   epochs: int | None = None) -> SequenceClassifier:
    """The paper's fine-tuning loop on one task with one seed: the trained classifier (in eval mode).
    `epochs` (finetune-tuned's choice) replaces the recipe's epochs for the task."""
    spec = task.spec
    model = initial_classifier(encoder_state, encoder_cfg, spec.num_labels, seed).to(device)
    train = training_examples(task, recipe, seed)
    epochs = recipe.epochs_for(spec.name) if epochs is None else epochs
    steps_per_epoch = math.ceil(len(train) / recipe.batch_size)
    total = max(1, epochs * steps_per_epoch)
    opt = torch.optim.AdamW(
        layerwise_param_groups(model, recipe.lr, recipe.layerwise_lr_decay, recipe.weight_decay), eps=1e-6
    )
    rng = np.random.default_rng([seed, 11])
    step = 0
    model.train()
    # a non-finite loss is flagged on the device and read once per epoch, not once per step (on a GPU each
    # read waits for the device); the weights it spoils are discarded with the error
    bad = torch.zeros((), dtype=torch.bool, device=device)
    for epoch in range(epochs):
        order = rng.permutation(len(train))
        first = step
        for i in range(0, len(train), recipe.batch_size):
            b = encode_examples(tokenizer, [train[j] for j in order[i : i + recipe.batch_size]], recipe.max_len)
            optim.set_lr(opt, optim.lr_at(step, total, 1.0, recipe.warmup_fraction), relative=True)
            padded = has_padding(b["attention_mask"])  # on the host copy: no device read
            logits = model(b["input_ids"].to(device), b["segment_ids"].to(device), b["attention_mask"].to(device),
                           padded)
            labels = b["labels"].to(device)
            loss = F.mse_loss(logits.squeeze(-1), labels.float()) if spec.regression else F.cross_entropy(logits, labels)
            bad |= ~torch.isfinite(loss.detach())
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            step += 1
        if bool(bad):
            raise BenchError(f"non-finite fine-tuning loss on {spec.name} (seed {seed}, epoch {epoch + 1}, a step "
                             f"from {first} to {step - 1}); try a lower lr")
    return model.eval()


@torch.no_grad()
def score_classifier(model: SequenceClassifier, task, tokenizer, recipe: Recipe, split: str, device
                     ) -> tuple[dict, np.ndarray]:
    """Metrics of a fine-tuned classifier on one evaluation split, and its outputs ((N, labels), in the
    split's order)."""
    spec = task.spec
    examples = task.splits[split]
    outputs = classifier_outputs(model, spec, examples, tokenizer, recipe, device)
    return _score(spec, _predictions(spec, outputs), _labels_array(examples, spec.regression), split), outputs


@torch.no_grad()
def classifier_outputs(model: SequenceClassifier, spec, examples, tokenizer, recipe: Recipe, device) -> np.ndarray:
    """A fine-tuned classifier's outputs ((N, labels), in the examples' order)."""
    order = _by_length(examples)
    outputs = np.zeros((len(examples), spec.num_labels), dtype=np.float32)
    parts = []  # kept on the device and copied once at the end: no wait for the device per batch
    for i in range(0, len(examples), 128):
        sel = order[i : i + 128]
        b = encode_examples(tokenizer, [examples[j] for j in sel], recipe.max_len)
        padded = has_padding(b["attention_mask"])  # on the host copy: no device read
        parts.append(model(b["input_ids"].to(device), b["segment_ids"].to(device), b["attention_mask"].to(device),
                           padded).float())
    if parts:
        outputs[order] = torch.cat(parts).cpu().numpy()
    return outputs


def evaluate(encoder: Encoder, task, tokenizer, recipe: Recipe, seed: int, device, cache: dict | None = None,
             record: dict | None = None) -> dict:
    """Score one encoder on one task with one seed under the recipe's protocol; `record` (a dict) receives
    {split: (predictions, labels, example indices, dev sha256)}."""
    protocol = require("protocol", recipe.protocol, PROTOCOLS)
    if protocol == "probe":
        return probe(encoder.to(device), task, tokenizer, recipe, seed, device, cache, record)
    state = {k: v.detach().cpu().clone() for k, v in encoder.state_dict().items()}  # finetune, fewshot
    if protocol != "finetune-tuned":
        return finetune(state, encoder.cfg, task, tokenizer, recipe, seed, device, record)
    cache = cache if cache is not None else {}
    key = ("finetune-tuned", task.spec.name, recipe)  # once per (encoder, task): cache is one encoder's
    if key not in cache:
        cache[key] = tuning.choose(task, recipe, selection_fit(state, encoder.cfg, tokenizer, recipe, device))
    choice = cache[key]
    results = finetune(state, encoder.cfg, task, tokenizer, dataclasses.replace(recipe, lr=choice.lr), seed, device,
                       record, epochs=choice.epochs)
    return {**results, "tuned_lr": float(choice.lr), "tuned_epochs": float(choice.epochs)}


def selection_fit(state: dict, encoder_cfg, tokenizer, recipe: Recipe, device):
    """finetune-tuned's fit_predict (score/tuning.choose): this loop with the grid point's lr and epochs,
    the fixed selection seed, all of the (capped) fitting part."""
    fit_recipe = dataclasses.replace(recipe, protocol="finetune", max_train_examples=None)

    def fit_predict(part, held, lr: float, epochs: int) -> np.ndarray:
        model = fit_classifier(state, encoder_cfg, part, tokenizer, dataclasses.replace(fit_recipe, lr=lr),
                               tuning.SELECTION_SEED, device, epochs=epochs)
        return _predictions(part.spec, classifier_outputs(model, part.spec, held, tokenizer, recipe, device))
    return fit_predict
