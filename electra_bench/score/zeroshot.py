"""The zero-shot reading of minimal pairs: each encoder scores both sentences of a pair with its own
pre-training head, and a pair counts as right when the grammatical sentence scores higher (a tie counts
half). Nothing is fitted, so the reading cannot learn the task from its examples: it reads what
pre-training put in the heads (BLiMP's protocol; BabyLM scores small models this way for that reason).

The readings, each reported under its own name:
- `pll`: pseudo-log-likelihood (Salazar et al. 2020) with a masked-LM head: the sum over the sentence's
  pieces of log P(piece | the sentence with it masked). A word of several pieces is scored left to right
  within the word (Kauf & Ivanova 2023, "PLL-word-l2r"): scoring piece i masks piece i and the pieces of
  the same word after it, so a word's later pieces cannot give its earlier ones away. MLM reads pairs
  this way with its own head; RTD's generator (a small MLM) too, reported as `generator`.
- `discriminator`: RTD's discriminator on the unmasked sentence, the sum over its real tokens (never
  [CLS] or [SEP], which are never replaced in pre-training) of log P(original) = log sigmoid(-logit).
The untrained encoder reads pairs with the random heads of both objectives at the same seed: the
chance control of each reading.

Cost (per sentence of n pieces): `pll` runs n masked copies through the encoder (all copies of a batch of
sentences in one forward), `discriminator` one copy. Sentences longer than `max_len` - 2 pieces cannot be
read whole: their pairs are left out of every reading, and the count scored is reported.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from ..errors import BenchError
from ..model import Encoder, has_padding
from .finetune import dev_sha256
from .metrics import compute

READINGS = ("pll", "discriminator", "generator")


@dataclass(frozen=True)
class Reader:
    """One way to score a sentence: an encoder and the head it reads with; `kind` is `pll` (a masked-LM
    head: `head(hidden, positions)` -> (B, P, V)) or `discriminator` (`head(hidden)` -> (B, T) logits)."""

    kind: str
    encoder: Encoder
    head: torch.nn.Module


def readers_of(module: torch.nn.Module) -> dict[str, Reader]:
    """The readings an objective module supports, by name: MLM's `pll`; RTD's `discriminator` and
    `generator` (the generator's PLL). Anything else (Table 5's ablations) is refused in one line."""
    if hasattr(module, "disc_head") and hasattr(module, "gen_head"):
        out = {"discriminator": Reader("discriminator", module.discriminator, module.disc_head)}
        if isinstance(module.generator, Encoder):  # a uniform generator has no encoder to read with
            out["generator"] = Reader("pll", module.generator, module.gen_head)
        return out
    if hasattr(module, "head") and hasattr(module, "encoder"):
        return {"pll": Reader("pll", module.encoder, module.head)}
    raise BenchError(f"the zero-shot reading knows MLM and RTD modules, not {type(module).__name__}")


def _pieces(tokenizer, sentences: list[str]) -> list[tuple[list[int], list[int]]]:
    """(piece ids, word index of each piece) per sentence: words are the pre-tokenizer's units."""
    return tokenizer.encode_words(sentences)


def _pll_rows(ids: list[int], words: list[int], special) -> list[tuple[list[int], int, int]]:
    """The masked copies of one sentence for PLL-word-l2r: (input ids with [CLS]/[SEP], scored position,
    original id) for each piece."""
    full = [special.cls] + ids + [special.sep]
    rows = []
    for i, (tok, w) in enumerate(zip(ids, words)):
        row = list(full)
        for j in range(i, len(ids)):
            if j == i or words[j] == w:
                row[j + 1] = special.mask
            else:
                break  # a word's pieces are contiguous: past the word nothing more is masked
        rows.append((row, i + 1, tok))
    return rows


def _batches(lengths: list[int], rows_per_batch: int):
    """Row indices grouped by length (less padding), at most `rows_per_batch` each."""
    order = np.argsort(lengths, kind="stable")
    for i in range(0, len(order), rows_per_batch):
        yield order[i : i + rows_per_batch]


def _tensors(rows: list[list[int]], pad: int, device):
    T = max(len(r) for r in rows)
    ids = torch.full((len(rows), T), pad, dtype=torch.long)
    att = torch.zeros((len(rows), T), dtype=torch.long)
    for k, r in enumerate(rows):
        ids[k, : len(r)] = torch.tensor(r)
        att[k, : len(r)] = 1
    padded = has_padding(att)  # on the host copy: no device read
    return ids.to(device), torch.zeros_like(ids).to(device), att.to(device), padded


@torch.no_grad()
def pll_scores(reader: Reader, pieces: list[tuple[list[int], list[int]]], special, device,
               rows_per_batch: int = 512) -> np.ndarray:
    """Each sentence's pseudo-log-likelihood (nats) under a masked-LM reader."""
    rows, owner = [], []
    for s, (ids, words) in enumerate(pieces):
        for row in _pll_rows(ids, words, special):
            rows.append(row)
            owner.append(s)
    out = np.zeros(len(pieces), dtype=np.float64)
    reader.encoder.eval()
    reader.head.eval()
    parts = []
    for sel in _batches([len(r[0]) for r in rows], rows_per_batch):
        ids, seg, att, padded = _tensors([rows[k][0] for k in sel], special.pad, device)
        hidden = reader.encoder(ids, seg, att, padded)  # (B, T, H)
        pos = torch.tensor([[rows[k][1]] for k in sel], device=device)  # (B, 1)
        logits = reader.head(hidden, pos)[:, 0].float()  # (B, V)
        target = torch.tensor([rows[k][2] for k in sel], device=device)  # (B,)
        parts.append((sel, F.log_softmax(logits, -1).gather(1, target[:, None])[:, 0]))
    for sel, lp in parts:  # read once at the end: no wait for the device per batch
        np.add.at(out, np.asarray(owner)[sel], lp.cpu().double().numpy())
    return out


@torch.no_grad()
def discriminator_scores(reader: Reader, pieces: list[tuple[list[int], list[int]]], special, device,
                         rows_per_batch: int = 512) -> np.ndarray:
    """Each sentence's summed log P(original) over its real tokens under the discriminator."""
    rows = [[special.cls] + ids + [special.sep] for ids, _ in pieces]
    out = np.zeros(len(pieces), dtype=np.float64)
    reader.encoder.eval()
    reader.head.eval()
    parts = []
    for sel in _batches([len(r) for r in rows], rows_per_batch):
        ids, seg, att, padded = _tensors([rows[k] for k in sel], special.pad, device)
        logits = reader.head(reader.encoder(ids, seg, att, padded)).float()  # (B, T): logit of "replaced"
        real = att.bool() & (ids != special.cls) & (ids != special.sep)  # (B, T): never [CLS]/[SEP]/padding
        parts.append((sel, (F.logsigmoid(-logits) * real).sum(-1)))
    for sel, lp in parts:
        out[sel] = lp.cpu().double().numpy()
    return out


def pair_accuracy(good: np.ndarray, bad: np.ndarray) -> float:
    """The share of pairs whose good sentence scores higher, ties counting half (0-1)."""
    if len(good) == 0:
        raise BenchError("no minimal pair to score")
    return float(np.mean((good > bad) + 0.5 * (good == bad)))


@dataclass
class PairSet:
    """A minimal-pair task's pairs as the readers see them: the pieces of the good and bad sentences of
    every pair short enough to read whole, and which pairs those are (indices into the task's split)."""

    good: list[tuple[list[int], list[int]]]
    bad: list[tuple[list[int], list[int]]]
    index: np.ndarray
    total: int


def pair_set(task, tokenizer, max_len: int, split: str = "dev") -> PairSet:
    """Tokenise a minimal-pair task's split once (every reader of every encoder of a run shares it)."""
    if not getattr(task.spec, "minimal_pairs", False):
        raise BenchError(f"task {task.spec.name}: the zero-shot reading scores minimal-pair tasks only "
                         f"(pairs of a good and a bad sentence); score it with --protocol probe or finetune")
    examples = task.splits.get(split) or []
    if not examples:
        raise BenchError(f"task {task.spec.name}: no '{split}' pairs to score")
    good = _pieces(tokenizer, [ex.text_a for ex in examples])
    bad = _pieces(tokenizer, [ex.text_b or "" for ex in examples])
    keep = [i for i, (g, b) in enumerate(zip(good, bad)) if 0 < len(g[0]) <= max_len - 2 and 0 < len(b[0]) <= max_len - 2]
    if not keep:
        raise BenchError(f"task {task.spec.name}: no pair fits in {max_len} tokens")
    return PairSet([good[i] for i in keep], [bad[i] for i in keep], np.asarray(keep), len(examples))


def score_with(reader: Reader, pairs: PairSet, special, device) -> tuple[float, np.ndarray, np.ndarray]:
    """(accuracy, good scores, bad scores) of one reader on a pair set; good and bad sentences of all pairs
    go through the encoder together."""
    fn = pll_scores if reader.kind == "pll" else discriminator_scores
    scores = fn(reader, pairs.good + pairs.bad, special, device)
    good, bad = scores[: len(pairs.good)], scores[len(pairs.good) :]
    if not (np.isfinite(good).all() and np.isfinite(bad).all()):
        raise BenchError("a zero-shot score is not finite (NaN or inf in the encoder's outputs)")
    return pair_accuracy(good, bad), good, bad


def metric_name(reading: str) -> str:
    """A score row's metric for one reading (`pll_accuracy`, `discriminator_accuracy`,
    `generator_accuracy`); `accuracy`, the task's primary metric, is the kept encoder's own head."""
    return f"{reading}_accuracy"


# what "accuracy" (the primary metric: the verdict's) reads for each scored label: the kept encoder's own
# head; the untrained encoder's is its MLM head's (every random head of it is also reported by name)
OWN_READING = {"mlm": "pll", "rtd": "discriminator", "init": "pll"}


def own_reading(label: str) -> str:
    """The reading a label's `accuracy` is (OWN_READING); one line for what has none (Table 5's ablations)."""
    if label not in OWN_READING:
        raise BenchError(f"the zero-shot reading scores MLM, RTD and the untrained encoder, not '{label}'")
    return OWN_READING[label]


def _wins(good: np.ndarray, bad: np.ndarray, seed: int) -> np.ndarray:
    """1 where the good sentence scores higher, 0 where lower; a tie is decided by a coin of the
    evaluation seed (its expectation is the half a tie is worth, and each stored prediction stays a
    class id the statistics can resample)."""
    coin = np.random.default_rng([seed, 23]).random(len(good)) < 0.5
    return np.where(good == bad, coin, good > bad).astype(np.int64)


def evaluate_pairs(readers: dict[str, Reader], own: str, task, tokenizer, max_len: int, seed: int, device,
                   cache: dict | None = None, record: dict | None = None) -> dict[str, float]:
    """One encoder's zero-shot metrics on one minimal-pair task and evaluation seed, 0-100 as every score:
    `accuracy` (reading `own`), `<reading>_accuracy` for every reader, `pairs_scored` (a count); `cache` keeps the tokenised pairs and each
    reader's sentence scores across seeds (only ties depend on the seed); `record` receives the `own`
    reading's per-pair outcomes (1 = good preferred) for the statistics."""
    cache = cache if cache is not None else {}
    key = (task.spec.name, "pairs")
    if key not in cache:
        cache[key] = pair_set(task, tokenizer, max_len)
    pairs: PairSet = cache[key]
    metrics: dict[str, float] = {}
    for name, reader in readers.items():
        rkey = (task.spec.name, "zeroshot", name)
        if rkey not in cache:
            cache[rkey] = score_with(reader, pairs, tokenizer.special, device)[1:]
        good, bad = cache[rkey]
        wins, labels = _wins(good, bad, seed), np.ones(len(good), dtype=np.int64)
        value = compute("accuracy", wins, labels)["accuracy"]  # the 0-100 scale of every score
        metrics[metric_name(name)] = value
        if name == own:
            metrics["accuracy"] = value
            if record is not None:
                record["dev"] = (wins, labels, pairs.index, _pairs_sha256(task, pairs.index))
    if "accuracy" not in metrics:
        raise BenchError(f"the zero-shot reading '{own}' is not one of this encoder's ({', '.join(readers)})")
    metrics["pairs_scored"] = float(len(pairs.index))
    return metrics


def _pairs_sha256(task, index: np.ndarray) -> str:
    """sha256 of the scored pairs' texts, in scoring order (what stored predictions belong to)."""
    return dev_sha256(task.splits["dev"], index, np.ones(len(index), dtype=np.int64))


def score_readers(readers: dict[str, Reader], own: str, tokenizer, tasks, seeds: list[int], max_len: int,
                  device, predictions: dict | None = None) -> list[dict]:
    """Rows {task, seed, metric, value} of one encoder's readers on every minimal-pair task and evaluation
    seed (the zero-shot counterpart of scoring.score_encoder); `predictions` receives
    {task: {seed: {split: (outcomes, labels, indices, sha256)}}}."""
    rows, cache = [], {}
    for reader in readers.values():
        reader.encoder.to(device)
        reader.head.to(device)
    for task in tasks:
        for seed in seeds:
            record = {} if predictions is not None else None
            metrics = evaluate_pairs(readers, own, task, tokenizer, max_len, seed, device, cache, record)
            if record is not None:
                predictions.setdefault(task.spec.name, {})[seed] = record
            rows += [{"task": task.spec.name, "seed": seed, "metric": m, "value": v} for m, v in metrics.items()]
    return rows


def untrained_readers(preset, train, special, seed: int) -> dict[str, Reader]:
    """The untrained encoder's readers: the random heads of both objectives at pre-training seed `seed`,
    built exactly as the trainer builds its step-0 model (same encoder weights for both: the
    'untrained' point of a comparison, objectives.initial_encoder)."""
    from ..pretrain.trainer import initial_model

    out: dict[str, Reader] = {}
    for objective in ("mlm", "rtd"):
        model, _ = initial_model(objective, preset.for_objective(objective), train, False, special, seed)
        out.update(readers_of(model.eval()))
    return out
