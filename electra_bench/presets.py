"""Named pre-training presets: typed functions returning a `Preset`, listed by a registry.

`small`, `base` and `large` are the ELECTRA paper's (Clark et al. 2020, Table 6 and the official
configure_pretraining.py); the CPU presets are ours and say so in their description.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable

from .choices import EMBEDDING_SHARING, OBJECTIVES, require
from .errors import BenchError
from .model_config import EncoderConfig, generator_config

# The fine-tuning recipe's defaults (ELECTRA paper, Table 7: ELECTRA-Small's values); presets differ
# where the paper's do, and a checkpoint records its preset's pair.
FINETUNE_LR = 3e-4
LAYERWISE_LR_DECAY = 0.8


@dataclass(frozen=True)
class Preset:
    name: str
    description: str
    encoder: EncoderConfig  # the MLM model, and RTD's discriminator
    generator_size: float  # generator hidden as a fraction of the discriminator's (or absolute when > 1)
    seq_len: int
    batch_size: int
    lr: float
    steps: dict[str, int]  # the paper's full schedule per objective (BERT trains longer at equal FLOPs)
    warmup_fraction: float  # of the budget; the paper warms up 10,000 steps
    mask_prob: float = 0.15
    disc_weight: float = 50.0  # ELECTRA's lambda
    rtd_temperature: float = 1.0  # the generator is sampled from softmax(logits / T) (official `temperature`)
    # Ours, a bootstrap for small budgets: (start temperature, held until this fraction of the budget,
    # reaches rtd_temperature at this fraction); linear in between, rtd_temperature after. None: constant.
    rtd_temperature_warmup: tuple[float, float, float] | None = None
    disallow_correct: bool = False  # the official option: a sample never equals the original token
    # The official code's other generator knobs (configure_pretraining.py), for every objective with a
    # generator (rtd and the Table 5 ablations); the defaults are the paper's ELECTRA:
    gen_weight: float = 1.0  # the generator (MLM) loss's weight (official `gen_weight`)
    generator_layers: float = 1.0  # generator depth: a fraction of the discriminator's (or absolute when > 1)
    uniform_generator: bool = False  # replacements uniform over the vocabulary, no generator model
    embedding_sharing: str = "shared"  # choices.EMBEDDING_SHARING; "untied": official untied_generator_embeddings
    untied_generator: bool = True  # False: one transformer is generator and discriminator (all weights tied)
    warmup_steps: int | None = None  # the official num_warmup_steps; when set, it replaces warmup_fraction
    # Ours, for tiny budgets: output layers start at what a constant predictor knows (MLM/generator
    # bias = log unigram frequency; discriminator at the replaced rate). Off for the paper's presets.
    output_prior_init: bool = False
    weight_decay: float = 0.01
    adam_eps: float = 1e-6
    adam_betas: tuple[float, float] = (0.9, 0.999)
    grad_clip: float = 1.0
    # fine-tuning recipe (ELECTRA paper, Table 7)
    finetune_lr: float = FINETUNE_LR
    layerwise_lr_decay: float = LAYERWISE_LR_DECAY
    source: str = "paper"  # "paper" or "ours"
    checkpoint_fractions: tuple[float, ...] = (1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0)
    # Each objective's own tuned values (our CPU presets, tuned separately on dev: docs/tuning.md);
    # the paper's presets use one set for both.
    objective_overrides: dict[str, dict] = field(default_factory=dict)

    def for_objective(self, objective: str) -> "Preset":
        """The preset as `objective` trains it (its overrides applied)."""
        changes = self.objective_overrides.get(objective)
        return dataclasses.replace(self, **changes, objective_overrides={}) if changes else self

    def full_steps(self, objective: str) -> int:
        """The paper's full schedule for `objective`: its own entry in `steps`, else ELECTRA's (the
        Table 5 ablations all run RTD's generator and were trained as ELECTRA was)."""
        return self.steps.get(objective, self.steps["rtd"])

    def warmup_for(self, total_steps: int) -> float:
        """The warm-up as a fraction of a run of `total_steps`: `warmup_steps` when set, else
        `warmup_fraction` (pretrain/optim.lr_at)."""
        if self.warmup_steps is None:
            return self.warmup_fraction
        return self.warmup_steps / max(1, total_steps)

    def temperature_at(self, fraction: float) -> float:
        """The generator's sampling temperature once `fraction` of the budget is spent (keyed to the
        budget, as the learning rate is): `rtd_temperature` unless a warm-up is set."""
        if self.rtd_temperature_warmup is None:
            return self.rtd_temperature
        start, hold, end = self.rtd_temperature_warmup
        if fraction < hold:
            return start
        if fraction >= end:
            return self.rtd_temperature
        return start + (self.rtd_temperature - start) * (fraction - hold) / (end - hold)

    @property
    def generator(self) -> EncoderConfig:
        """The generator's shape: `generator_size` wide, `generator_layers` deep; its own embeddings
        (embedding_sharing "untied") are of its hidden size, as the official code makes them; with
        `untied_generator` off it is the discriminator itself."""
        if not self.untied_generator:
            return self.encoder
        cfg = generator_config(self.encoder, self.generator_size)
        changes: dict = {}
        if self.generator_layers != 1.0:
            L = self.generator_layers
            changes["num_layers"] = int(L) if L > 1 else max(1, int(round(self.encoder.num_layers * L)))
        if self.embedding_sharing == "untied":
            changes["embedding_size"] = cfg.hidden_size
        return dataclasses.replace(cfg, **changes) if changes else cfg

    @property
    def max_predictions(self) -> int:
        """Masked-position slots per sequence: the official code's max_predictions_per_seq,
        int((mask_prob + 0.005) x seq_len); each sequence fills round(mask_prob x real tokens) of them."""
        return max(1, int((self.mask_prob + 0.005) * self.seq_len))

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        for f in dataclasses.fields(self):  # see IDENTITY_V1
            if f.name not in IDENTITY_V1 and d[f.name] == f.default:
                d.pop(f.name)
        d["generator"] = dataclasses.asdict(self.generator)
        d["max_predictions"] = self.max_predictions
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Preset":
        """The preset `to_dict` wrote (a run's run.json): derived keys dropped, tuples restored."""
        fields = {f.name for f in dataclasses.fields(cls)}
        kw = {k: v for k, v in d.items() if k in fields}
        kw["encoder"] = EncoderConfig(**d["encoder"])
        for name in ("adam_betas", "checkpoint_fractions", "rtd_temperature_warmup"):
            if kw.get(name) is not None:
                kw[name] = tuple(kw[name])
        return cls(**kw)


# The fields of the first stored run directories (schema 1 of a run's identity). Every field added since is
# left out of `to_dict` at its default, so a run made before it keeps its identity (run.json, compare's
# pre-training directories) and resumes; a new field needs no entry anywhere.
IDENTITY_V1 = ("name", "description", "encoder", "generator_size", "seq_len", "batch_size", "lr", "steps",
               "warmup_fraction", "mask_prob", "disc_weight", "rtd_temperature", "disallow_correct",
               "output_prior_init", "weight_decay", "adam_eps", "adam_betas", "grad_clip", "finetune_lr",
               "layerwise_lr_decay", "source", "checkpoint_fractions", "objective_overrides")

_REGISTRY: dict[str, Callable[[], Preset]] = {}


def register(fn: Callable[[], Preset]) -> Callable[[], Preset]:
    _REGISTRY[fn.__name__] = fn
    return fn


def names() -> list[str]:
    return list(_REGISTRY)


def get(name: str) -> Preset:
    if name not in _REGISTRY:
        raise BenchError(f"unknown preset '{name}': choose one of {', '.join(_REGISTRY)}")
    return _REGISTRY[name]()


_PAPER_VOCAB = 30522


@register
def small() -> Preset:
    return Preset(
        name="small",
        description="ELECTRA-Small / BERT-Small (paper): 14M params, seq 128, batch 128",
        encoder=EncoderConfig(
            vocab_size=_PAPER_VOCAB, embedding_size=128, hidden_size=256, num_layers=12, num_heads=4, ffn_size=1024
        ),
        generator_size=1 / 4,
        seq_len=128,
        batch_size=128,
        lr=5e-4,
        steps={"rtd": 1_000_000, "mlm": 1_450_000},
        warmup_fraction=0.01,
    )


@register
def base() -> Preset:
    return Preset(
        name="base",
        description="ELECTRA-Base / BERT-Base (paper): 110M params, seq 512, batch 256",
        encoder=EncoderConfig(
            vocab_size=_PAPER_VOCAB, embedding_size=768, hidden_size=768, num_layers=12, num_heads=12, ffn_size=3072
        ),
        generator_size=1 / 3,
        seq_len=512,
        batch_size=256,
        lr=2e-4,
        steps={"rtd": 766_000, "mlm": 1_000_000},
        warmup_fraction=10_000 / 766_000,
        finetune_lr=1e-4,
    )


@register
def large() -> Preset:
    return Preset(
        name="large",
        description="ELECTRA-Large (paper): 335M params, seq 512, batch 2048, mask 25%",
        encoder=EncoderConfig(
            vocab_size=_PAPER_VOCAB, embedding_size=1024, hidden_size=1024, num_layers=24, num_heads=16, ffn_size=4096
        ),
        generator_size=1 / 4,
        seq_len=512,
        batch_size=2048,
        lr=2e-4,
        mask_prob=0.25,
        steps={"rtd": 400_000, "mlm": 400_000},
        warmup_fraction=10_000 / 400_000,
        finetune_lr=5e-5,
        layerwise_lr_decay=0.9,
    )


@register
def tiny() -> Preset:
    """Ours: the embedded CPU default. Architecture (2 layers, hidden 128, seq 64) fixed a priori; the
    rest chosen by measured learning diagnostics and dev scores, with equal effort per objective
    (docs/tuning.md): a 2,048-token vocabulary, dropout off, peak lr 2e-3, output layers started at the
    unigram prior. MLM masks 25%; RTD keeps the official 15% and generator 1/4, and samples the
    generator at temperature 2 (the official `temperature` knob): at temperature 1 the discriminator
    finds no signal at any CPU budget we measured (up to 1.2e14) and its representations collapse
    (docs/tuning.md; `--temperature 1` runs the standard objective, and its diagnostics flag it).
    Temperature 2 is the best measured through whole runs; `--temperature 1 --temperature-warmup
    2:0.125:0.25` (standard from a quarter of the budget) learned in round 4 but was measured to 50% of
    one run only."""
    return Preset(
        name="tiny",
        description="ours, for a 2-core CPU: the embedded default (chosen by learning diagnostics, docs/tuning.md)",
        encoder=EncoderConfig(
            vocab_size=2048, embedding_size=128, hidden_size=128, num_layers=2, num_heads=2, ffn_size=512,
            max_positions=128, dropout=0.0,
        ),
        generator_size=1 / 4,
        seq_len=64,
        batch_size=32,
        lr=2e-3,
        steps={"rtd": 20_000, "mlm": 20_000},
        warmup_fraction=0.05,
        source="ours",
        output_prior_init=True,
        rtd_temperature=2.0,
        # three checkpoints, not the paper's five: scoring is a third of the default's 15 minutes
        checkpoint_fractions=(0.25, 0.5, 1.0),
        objective_overrides={"mlm": {"mask_prob": 0.25}},
    )


@register
def mini() -> Preset:
    return Preset(
        name="mini",
        description="ours, for a laptop CPU: 4 layers, hidden 256, seq 128",
        encoder=EncoderConfig(
            vocab_size=8192, embedding_size=128, hidden_size=256, num_layers=4, num_heads=4, ffn_size=1024,
            max_positions=128,
        ),
        generator_size=1 / 4,
        seq_len=128,
        batch_size=32,
        lr=1e-3,
        steps={"rtd": 50_000, "mlm": 50_000},
        warmup_fraction=0.05,
        source="ours",
    )


@dataclass
class Overrides:
    """What users change on the command line; None means 'keep the preset's value'."""

    steps: int | None = None
    batch_size: int | None = None
    seq_len: int | None = None
    generator_size: float | None = None
    lr: float | None = None
    mask_prob: float | None = None
    vocab_size: int | None = None
    rtd_temperature: float | None = None
    rtd_temperature_warmup: tuple[float, float, float] | None = None
    dropout: float | None = None
    # the official generator knobs (Preset's fields of the same names)
    gen_weight: float | None = None
    disc_weight: float | None = None
    generator_layers: float | None = None
    uniform_generator: bool | None = None
    embedding_sharing: str | None = None
    untied_generator: bool | None = None
    disallow_correct: bool | None = None
    warmup_steps: int | None = None
    checkpoint_fractions: tuple[float, ...] | None = None  # --checkpoints


def parse_checkpoints(text: str) -> tuple[float, ...]:
    """--checkpoints: fractions of the budget ("0.25,0.5,1"), or "N@FIRST": N fractions spaced evenly in
    log FLOPs from FIRST to 1 ("7@0.125": 0.125, 0.1768, ..., 0.7071, 1), where a crossover is placed.
    Rounded to 4 decimals (a checkpoint's directory name, layout.fraction_dir); the last must be 1, the
    budget the comparison is at."""
    text = text.strip()
    try:
        if "@" in text:
            n_text, first_text = text.split("@", 1)
            n, first = int(n_text), float(first_text)
            if n < 2 or not 0 < first < 1:
                raise ValueError
            values = [first ** (1 - i / (n - 1)) for i in range(n)]
        else:
            values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise BenchError(f"--checkpoints {text!r}: expected fractions of the budget like 0.25,0.5,1 or N@FIRST "
                         f"like 7@0.125 (N >= 2 log-spaced fractions from FIRST in (0, 1) to 1)") from None
    fractions = tuple(sorted({round(v, 4) for v in values}))
    if not fractions or any(not 0 < f <= 1 for f in fractions):
        raise BenchError(f"--checkpoints {text!r}: every fraction must be in (0, 1]")
    if fractions[-1] != 1.0:
        raise BenchError(f"--checkpoints {text!r}: the last checkpoint must be 1 (the whole budget, where the "
                         f"objectives are compared)")
    return fractions


# overrides that replace the preset field of the same name (the others reach into the encoder: vocab_size,
# dropout; or into every objective's schedule: steps)
_DIRECT = tuple(f.name for f in dataclasses.fields(Overrides)
                if f.name in {g.name for g in dataclasses.fields(Preset)} and f.name != "steps")


def resolve(name: str, ov: Overrides | None = None) -> Preset:
    """The preset with overrides applied and validated (bad values -> BenchError)."""
    p = get(name)
    if ov is None:
        return p
    for label, value in [("--steps", ov.steps), ("--batch-size", ov.batch_size), ("--seq-len", ov.seq_len),
                         ("--vocab-size", ov.vocab_size)]:
        if value is not None and value <= 0:
            raise BenchError(f"{label} must be a positive integer, got {value}")
    for label, value in [("--lr", ov.lr), ("--generator-size", ov.generator_size)]:
        if value is not None and not value > 0:
            raise BenchError(f"{label} must be positive, got {value}")
    if ov.rtd_temperature is not None and not ov.rtd_temperature >= 0:
        raise BenchError(f"--temperature must be >= 0, got {ov.rtd_temperature}")
    if ov.rtd_temperature_warmup is not None:
        start, hold, end = ov.rtd_temperature_warmup
        if not (start > 0 and 0 <= hold <= end <= 1):
            raise BenchError(f"--temperature-warmup T:HOLD:END needs T > 0 and 0 <= HOLD <= END <= 1, got "
                             f"{start:g}:{hold:g}:{end:g}")
    if ov.dropout is not None and not 0 <= ov.dropout < 1:
        raise BenchError(f"--dropout must be in [0, 1), got {ov.dropout}")
    if ov.mask_prob is not None and not 0 < ov.mask_prob < 1:
        raise BenchError(f"--mask-prob must be between 0 and 1, got {ov.mask_prob}")
    for label, value in [("--gen-weight", ov.gen_weight), ("--disc-weight", ov.disc_weight),
                         ("--warmup-steps", ov.warmup_steps)]:
        if value is not None and not value >= 0:
            raise BenchError(f"{label} must be >= 0, got {value}")
    if ov.generator_layers is not None and not ov.generator_layers > 0:
        raise BenchError(f"--generator-layers must be positive, got {ov.generator_layers}")
    if ov.embedding_sharing is not None:
        require("embedding sharing", ov.embedding_sharing, EMBEDDING_SHARING)
    sharing = ov.embedding_sharing if ov.embedding_sharing is not None else p.embedding_sharing
    untied = ov.untied_generator if ov.untied_generator is not None else p.untied_generator
    if not untied and sharing != "shared":
        raise BenchError(f"--tied-generator shares every weight, embeddings included: it excludes "
                         f"--embedding-sharing {sharing}")
    enc = p.encoder
    if ov.vocab_size is not None:
        enc = dataclasses.replace(enc, vocab_size=ov.vocab_size)
    if ov.dropout is not None:
        enc = dataclasses.replace(enc, dropout=ov.dropout)
    if ov.seq_len is not None and ov.seq_len > enc.max_positions:
        enc = dataclasses.replace(enc, max_positions=ov.seq_len)
    changes: dict = {"encoder": enc}
    if ov.steps is not None:
        changes["steps"] = {o: ov.steps for o in OBJECTIVES}
    for attr in _DIRECT:  # an override named like a preset field replaces it
        if getattr(ov, attr) is not None:
            changes[attr] = getattr(ov, attr)
    # a value given on the command line applies to both objectives, over their tuned values
    given = {k for k in changes if k != "encoder"}
    changes["objective_overrides"] = {
        o: {k: v for k, v in d.items() if k not in given} for o, d in p.objective_overrides.items()
    }
    return dataclasses.replace(p, **changes)
