"""What one pre-training run is configured by: a tree of typed sections, each checked where it is built.

  RunConfig
    model       ModelConfig       the encoder, and RTD's generator derived from it
    objective   ObjectiveConfig   masking, the generator's sampling, the losses' weights
    optim       OptimConfig       AdamW and gradient clipping
    schedule    ScheduleConfig    batch shape, the paper's step counts, warm-up, checkpoints
    evaluation  EvaluationConfig  the fine-tuning recipe a checkpoint is scored with

Each stage receives its own part (the optimizer `optim`, the learning-rate schedule `schedule`, the
objective `model` and `objective`, fine-tuning `evaluation`). A field is a *knob*: its name is unique over
the whole tree (the encoder's fields included), so a knob is set by name (`with_knobs`, `--lr` on the
command line, a preset's per-objective values) without saying where it lives; adding one is one field here
and, if users set it, one option in cli/options.py.

Plain data, no torch (the command line checks a config before torch is imported). presets.py names them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from .choices import EMBEDDING_SHARING, OBJECTIVES, require
from .errors import BenchError
from .model_config import EncoderConfig, generator_config

# The fine-tuning recipe's defaults (ELECTRA paper, Table 7: ELECTRA-Small's values); presets differ
# where the paper's do, and a checkpoint records its preset's pair.
FINETUNE_LR = 3e-4
LAYERWISE_LR_DECAY = 0.8

# The layout `RunConfig.to_dict` writes (a run's run.json, `--show-config`). 1: one flat dict (runs made
# before the tree, read by `from_dict` still); 2: one dict per section.
SCHEMA = 2


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise BenchError(message)


def require_knobs(names, what: str) -> None:
    """Every one of `names` is a knob (KNOBS), else one line naming the others and the known ones."""
    unknown = sorted(set(names) - set(KNOBS))
    _check(not unknown, f"unknown {what}(s): {', '.join(unknown)}; known: {', '.join(sorted(KNOBS))}")


@dataclass(frozen=True)
class ModelConfig:
    encoder: EncoderConfig  # the MLM model, and RTD's discriminator
    generator_size: float  # generator hidden as a fraction of the discriminator's (or absolute when > 1)
    # The official code's generator knobs (configure_pretraining.py); the defaults are the paper's ELECTRA:
    generator_layers: float = 1.0  # generator depth: a fraction of the discriminator's (or absolute when > 1)
    uniform_generator: bool = False  # replacements uniform over the vocabulary, no generator model
    embedding_sharing: str = "shared"  # choices.EMBEDDING_SHARING; "untied": official untied_generator_embeddings
    untied_generator: bool = True  # False: one transformer is generator and discriminator (all weights tied)
    # Ours, for tiny budgets: output layers start at what a constant predictor knows (MLM/generator
    # bias = log unigram frequency; discriminator at the replaced rate). Off for the paper's presets.
    output_prior_init: bool = False

    def __post_init__(self) -> None:
        enc = self.encoder
        _check(enc.vocab_size > 0, f"vocab_size must be a positive integer, got {enc.vocab_size}")
        _check(0 <= enc.dropout < 1, f"dropout must be in [0, 1), got {enc.dropout}")
        _check(self.generator_size > 0, f"generator_size must be positive, got {self.generator_size}")
        _check(self.generator_layers > 0, f"generator_layers must be positive, got {self.generator_layers}")
        require("embedding sharing", self.embedding_sharing, EMBEDDING_SHARING)
        _check(self.untied_generator or self.embedding_sharing == "shared",
               f"--tied-generator (untied_generator false) shares every weight, embeddings included: it "
               f"excludes --embedding-sharing {self.embedding_sharing}")

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


@dataclass(frozen=True)
class ObjectiveConfig:
    mask_prob: float = 0.15
    disc_weight: float = 50.0  # ELECTRA's lambda
    gen_weight: float = 1.0  # the generator (MLM) loss's weight (official `gen_weight`)
    rtd_temperature: float = 1.0  # the generator is sampled from softmax(logits / T) (official `temperature`)
    # Ours, a bootstrap for small budgets: (start temperature, held until this fraction of the budget,
    # reaches rtd_temperature at this fraction); linear in between, rtd_temperature after. None: constant.
    rtd_temperature_warmup: tuple[float, float, float] | None = None
    disallow_correct: bool = False  # the official option: a sample never equals the original token

    def __post_init__(self) -> None:
        _check(0 < self.mask_prob < 1, f"mask_prob must be between 0 and 1, got {self.mask_prob}")
        for name in ("disc_weight", "gen_weight", "rtd_temperature"):
            value = getattr(self, name)
            _check(value >= 0, f"{name} must be >= 0, got {value}")
        if self.rtd_temperature_warmup is not None:
            start, hold, end = self.rtd_temperature_warmup
            _check(start > 0 and 0 <= hold <= end <= 1,
                   f"--temperature-warmup T:HOLD:END needs T > 0 and 0 <= HOLD <= END <= 1, got "
                   f"{start:g}:{hold:g}:{end:g}")

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


@dataclass(frozen=True)
class OptimConfig:
    lr: float  # peak
    weight_decay: float = 0.01
    adam_eps: float = 1e-6
    adam_betas: tuple[float, float] = (0.9, 0.999)
    grad_clip: float = 1.0

    def __post_init__(self) -> None:
        _check(self.lr > 0, f"lr must be positive, got {self.lr}")


@dataclass(frozen=True)
class ScheduleConfig:
    seq_len: int
    batch_size: int  # global, sequences per step
    steps: dict[str, int]  # the paper's full schedule per objective (BERT trains longer at equal FLOPs)
    warmup_fraction: float  # of the budget; the paper warms up 10,000 steps
    warmup_steps: int | None = None  # the official num_warmup_steps; when set, it replaces warmup_fraction
    checkpoint_fractions: tuple[float, ...] = (1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0)

    def __post_init__(self) -> None:
        for name in ("seq_len", "batch_size"):
            value = getattr(self, name)
            _check(value > 0, f"{name} must be a positive integer, got {value}")
        for objective, n in self.steps.items():
            _check(n > 0, f"steps must be a positive integer, got {n} for {objective}")
        _check(self.warmup_steps is None or self.warmup_steps >= 0,
               f"warmup_steps must be >= 0, got {self.warmup_steps}")

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


@dataclass(frozen=True)
class EvaluationConfig:
    """The fine-tuning recipe (ELECTRA paper, Table 7)."""

    finetune_lr: float = FINETUNE_LR
    layerwise_lr_decay: float = LAYERWISE_LR_DECAY


SECTIONS = {"model": ModelConfig, "objective": ObjectiveConfig, "optim": OptimConfig,
            "schedule": ScheduleConfig, "evaluation": EvaluationConfig}


def _knob_paths() -> dict[str, tuple[str, ...]]:
    """Knob name -> where it lives: ("optim", "lr"), ("model", "encoder", "vocab_size"), ..."""
    paths: dict[str, tuple[str, ...]] = {}
    places = [((section,), cls) for section, cls in SECTIONS.items()] + [(("model", "encoder"), EncoderConfig)]
    for prefix, cls in places:
        for f in dataclasses.fields(cls):
            if f.name in paths:  # a knob is set by name: the name must say where
                raise TypeError(f"knob {f.name!r} is defined twice: {paths[f.name]} and {prefix}")
            paths[f.name] = prefix + (f.name,)
    return paths


KNOBS = _knob_paths()


@dataclass(frozen=True)
class RunConfig:
    name: str
    description: str
    model: ModelConfig
    objective: ObjectiveConfig
    optim: OptimConfig
    schedule: ScheduleConfig
    evaluation: EvaluationConfig = EvaluationConfig()
    source: str = "paper"  # "paper" or "ours"
    # Each objective's own tuned values, knob name -> value (our CPU presets, tuned separately on dev:
    # docs/tuning.md); the paper's presets use one set for both.
    objective_overrides: dict[str, dict] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for objective, knobs in self.objective_overrides.items():
            require_knobs(knobs, f"knob of preset {self.name} for {objective}")

    def with_knobs(self, **values: Any) -> "RunConfig":
        """This config with knobs replaced by name (`with_knobs(lr=1e-3, vocab_size=500)`); each section
        changed is rebuilt, hence checked again. `steps` given as one number applies to every objective."""
        require_knobs(values, "knob")
        if isinstance(values.get("steps"), int):
            values = {**values, "steps": {o: values["steps"] for o in OBJECTIVES}}
        edits: dict[str, dict[str, Any]] = {}  # section -> field -> value
        encoder_edits: dict[str, Any] = {}
        for knob, value in values.items():
            value = tuple(value) if isinstance(value, list) else value  # JSON's list: a run's config.json
            path = KNOBS[knob]
            (encoder_edits if len(path) == 3 else edits.setdefault(path[0], {}))[knob] = value
        if encoder_edits:  # over a whole encoder given in the same call, if any
            model = edits.setdefault("model", {})
            model["encoder"] = dataclasses.replace(model.get("encoder", self.model.encoder), **encoder_edits)
        parts = {section: dataclasses.replace(getattr(self, section), **e) for section, e in edits.items()}
        return dataclasses.replace(self, **parts)

    def for_objective(self, objective: str) -> "RunConfig":
        """The config as `objective` trains it (its overrides applied)."""
        changes = self.objective_overrides.get(objective)
        if not changes:
            return self
        return dataclasses.replace(self.with_knobs(**changes), objective_overrides={})

    @property
    def max_predictions(self) -> int:
        """Masked-position slots per sequence: the official code's max_predictions_per_seq,
        int((mask_prob + 0.005) x seq_len); each sequence fills round(mask_prob x real tokens) of them."""
        return max(1, int((self.objective.mask_prob + 0.005) * self.schedule.seq_len))

    def to_dict(self) -> dict:
        """Every field, one dict per section (schema 2), with the derived generator shape and
        max_predictions for readers."""
        d = {"schema": SCHEMA, **dataclasses.asdict(self)}
        d["model"]["generator"] = dataclasses.asdict(self.model.generator)
        d["max_predictions"] = self.max_predictions
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "RunConfig":
        """The config `to_dict` wrote: schema 2, or schema 1's flat dict (run.json of runs made before the
        tree; fields added since are absent there, at their defaults). Derived keys are dropped."""
        schema = d.get("schema", 1)
        if schema not in (1, SCHEMA):
            raise BenchError(f"config schema {schema!r}: this version reads schemas 1 to {SCHEMA} (a newer "
                             f"electra-bench wrote it?)")
        if schema == 1:
            d = _nest_flat(d)
        sections = {}
        for section, part_cls in SECTIONS.items():
            names = {f.name for f in dataclasses.fields(part_cls)}
            kw = {k: v for k, v in d.get(section, {}).items() if k in names}
            if part_cls is ModelConfig:
                kw["encoder"] = EncoderConfig(**kw["encoder"])
            for name in ("adam_betas", "checkpoint_fractions", "rtd_temperature_warmup"):
                if kw.get(name) is not None:
                    kw[name] = tuple(kw[name])
            sections[section] = part_cls(**kw)
        top = {k: d[k] for k in ("name", "description", "source", "objective_overrides") if k in d}
        return cls(**top, **sections)


def _nest_flat(d: dict) -> dict:
    """Schema 1 (one flat dict, `encoder` whole) as schema 2's sections."""
    nested: dict[str, Any] = {section: {} for section in SECTIONS}
    for key, value in d.items():
        if key == "encoder":
            nested["model"]["encoder"] = value
        elif key in KNOBS and len(KNOBS[key]) == 2:
            nested[KNOBS[key][0]][key] = value
        elif key in ("name", "description", "source", "objective_overrides"):
            nested[key] = value
    return nested
