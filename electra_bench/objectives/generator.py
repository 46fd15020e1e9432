"""RTD's generator, shared by ELECTRA and the paper's efficiency ablations: its make-up (the official
code's knobs: `generator_modules`, `UniformGenerator`, DeBERTaV3's `GradientDisentangledEmbeddings`), its
step (`generator_step`: mask, corrupt, predict, sample replacements) and the sampling itself. Written
once: every objective of the RTD family calls `generator_step` with its draws."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ..choices import EMBEDDING_SHARING, require
from ..errors import BenchError
from ..model import Dropout, Encoder, EncoderConfig, MaskedLMHead, init_weights
from .base import Batch, Noise
from .masking import choose_positions, corrupt, weighted_mlm


@dataclass
class GeneratorCorruption:
    """One batch after the generator step of the RTD family."""

    positions: torch.Tensor  # (B, P) masked positions
    weights: torch.Tensor  # (B, P) 1 on the real ones
    labels: torch.Tensor  # (B, P) the original tokens there
    gen_logits: torch.Tensor  # (B, P, V) the generator's
    gen_loss: torch.Tensor  # scalar, MLM loss of the generator (with gradient)
    gen_acc: torch.Tensor  # scalar, detached
    corrupted: torch.Tensor  # (B, T) the input with the samples written at the masked positions
    replaced: torch.Tensor  # (B, T) float, 1 where the sample differs from the original


def generator_step(m: nn.Module, batch: Batch, noise: Noise, vocab_size: int, padded: bool | None = None,
                   forbid: tuple[int, ...] = ()) -> GeneratorCorruption:
    """The generator step of the RTD family from the step's draws: choose and corrupt the masked positions
    ([MASK] in 85% of them, the rest kept), predict them with the generator, and sample replacements from
    its softmax (gumbel-max on `noise.gumbel`; with none, drawn here from the global generator, after the
    generator's dropout, where it always was). `m` holds special, mask_prob, max_predictions, temperature,
    disallow_correct, generator and gen_head. `forbid`: token ids never sampled (Replace/All-Tokens MLM
    forbid [MASK], so their model never sees it, which is what those ablations test)."""
    ids, seg, att = batch["input_ids"], batch["segment_ids"], batch["attention_mask"]
    positions, weights = choose_positions(ids, att, m.special, m.mask_prob, m.max_predictions, None,
                                          scores=noise.scores)
    labels = torch.gather(ids, 1, positions)  # (B, P)
    gen_in = corrupt(ids, positions, weights, m.special, vocab_size, 0.85, 0.0, None,
                     draws=(noise.corrupt_r, noise.corrupt_tokens))
    gen_hidden = m.generator(gen_in, seg, att, padded)  # (B, T, Hg)
    gen_logits = m.gen_head(gen_hidden, positions)  # (B, P, V)
    gen_loss, gen_acc = weighted_mlm(gen_logits, labels, weights)
    with torch.no_grad():
        logits = gen_logits.detach()
        if forbid:
            # a copy with -inf in the forbidden columns, indexed by Python ints: no index tensor copied to the
            # device every step (the same values as index_fill's)
            logits = logits.clone()
            for token in forbid:
                logits[..., token] = float("-inf")
        sampled = sample_replacements(logits, labels, m.temperature, m.disallow_correct, None, uniform=noise.gumbel)
        sampled = torch.where(weights > 0, sampled, labels)  # (B, P)
        corrupted = ids.scatter(1, positions, sampled)  # (B, T)
        replaced = (corrupted != ids).float()  # (B, T); a correct sample counts as original
    return GeneratorCorruption(positions, weights, labels, gen_logits, gen_loss, gen_acc.detach(), corrupted, replaced)


def draw_generator_noise(batch: Batch, rng: torch.Generator | None, max_predictions: int, vocab_size: int) -> Noise:
    """The RTD family's draws from `rng`, in the order its step uses them: masking scores, corruption, then
    the gumbel noise of the generator's samples. With no `rng` (the global generator, which dropout also
    draws from) the gumbel noise is left to the step, after the generator's dropout, where it always was."""
    from .masking import corruption_draws

    ids = batch["input_ids"]
    B, T = ids.shape
    P = min(max_predictions, T)
    scores = torch.rand(B, T, generator=rng, device=ids.device)
    r, tokens = corruption_draws((B, P), vocab_size, rng, ids.device)
    gumbel = None if rng is None else torch.rand(B, P, vocab_size, generator=rng, device=ids.device,
                                                 dtype=torch.float32)
    return Noise(scores, r, tokens, gumbel)


def sample_replacements(logits: torch.Tensor, originals: torch.Tensor, temperature: float | torch.Tensor,
                        disallow_correct: bool, rng: torch.Generator | None,
                        uniform: torch.Tensor | None = None) -> torch.Tensor:
    """Gumbel-max samples from softmax(logits / temperature): (B, P, V) -> (B, P). `disallow_correct`
    removes the original token from the choice (the official code's option); temperature 0 is argmax.
    `uniform`: the (B, P, V) float32 uniform draw, made beforehand and overwritten here when eager (a compiled
    step leaves it as it is); None: drawn from `rng`. `temperature` as a 0-d tensor: a compiled step whose
    temperature follows a schedule (pretrain/trainer.py), so that every value is an input of one graph rather
    than a constant that recompiles it.

    (B, P, V) is the largest tensor of the step, so it is touched as few times as possible: the noise is
    transformed in place, and at temperature 1 the logits are added as they are (x / 1 == x, so no
    scaled copy)."""
    if isinstance(temperature, torch.Tensor):
        scaled = torch.where(temperature > 0, logits.float() / temperature, logits.float() * 1e6)
    elif temperature == 1:
        scaled = logits.float()  # the logits themselves when they are fp32: not written to
    else:
        scaled = logits.float() / temperature if temperature > 0 else logits.float() * 1e6
    if disallow_correct:
        scaled = scaled.scatter(-1, originals[..., None], float("-inf"))
    # gumbel noise -log(-log(u + eps) + eps), in place. A compiled step must not write to its input: inductor
    # does not capture a graph that mutates an input in CUDA graphs (it runs it without them, with a warning)
    g = uniform if uniform is not None else torch.rand(logits.shape, generator=rng, device=logits.device,
                                                        dtype=torch.float32)
    g = g.add(1e-9) if torch.compiler.is_compiling() else g.add_(1e-9)
    g.log_().neg_().add_(1e-9).log_().neg_()
    return g.add_(scaled).argmax(-1)


def masked_token_mask(corruption: GeneratorCorruption, like: torch.Tensor) -> torch.Tensor:
    """(B, T) float: 1 at the real masked positions, 0 elsewhere (positions are distinct per row)."""
    return torch.zeros(like.shape, device=like.device).scatter(1, corruption.positions, corruption.weights)


def generator_term(gen_loss: torch.Tensor, gen_weight: float) -> torch.Tensor:
    """gen_weight x the generator's loss (the official `gen_weight`). At the default 1 it is the loss
    itself, not a multiply: the traced step, and so its measured FLOPs and the run's identity, stay
    those of the objective before the knob existed."""
    return gen_loss if gen_weight == 1.0 else gen_weight * gen_loss


class UniformGenerator(nn.Module):
    """The official `uniform_generator`: no model at all. It 'encodes' nothing (returns its input ids)
    and `UniformHead` gives logits 0 over the vocabulary, so replacements are uniform over V (special
    tokens included, as the official code) and the generator loss is the constant log V."""

    def forward(self, input_ids: torch.Tensor, segment_ids: torch.Tensor, attention_mask: torch.Tensor,
                padded: bool | None = None) -> torch.Tensor:
        return input_ids


class UniformHead(nn.Module):
    def __init__(self, vocab_size: int):
        super().__init__()
        self.vocab_size = vocab_size

    def forward(self, hidden: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        return torch.zeros(*positions.shape, self.vocab_size, device=positions.device)  # (B, P, V)


def generator_modules(kept: Encoder, gen_cfg: EncoderConfig, embedding_sharing: str = "shared",
                      uniform: bool = False, untied: bool = True) -> tuple[nn.Module, nn.Module]:
    """(generator, gen_head) for the RTD family, built after the kept encoder `kept`:

    - default: a separate (narrow) Encoder sharing `kept`'s whole embedding module, its MLM head tied to
      the shared word embeddings (the official code, and the paper's best setting);
    - `embedding_sharing="untied"` (official untied_generator_embeddings): the generator has its own
      embeddings (of its hidden size, as the official code makes them) and its head is tied to those;
    - `untied=False` (official untied_generator=False): `kept` itself is the generator, every weight
      shared (the paper's "tying all weights"; the generator then has the discriminator's size);
    - `embedding_sharing="gdes"` (DeBERTaV3): as the default, then `kept` reads the shared embeddings
      through `GradientDisentangledEmbeddings`, so only the generator's loss trains the shared tables;
    - `uniform=True` (official uniform_generator): `UniformGenerator`/`UniformHead`, no parameters.
    """
    require("embedding sharing", embedding_sharing, EMBEDDING_SHARING)
    if uniform:
        return UniformGenerator(), UniformHead(kept.cfg.vocab_size)
    if not untied:
        if embedding_sharing != "shared":
            raise BenchError(f"a generator that is the discriminator (untied_generator off) shares every weight: "
                             f"embedding sharing '{embedding_sharing}' does not apply")
        return kept, MaskedLMHead(kept.cfg, kept.embeddings.word)
    if embedding_sharing == "untied":
        generator = Encoder(gen_cfg)
        return generator, MaskedLMHead(gen_cfg, generator.embeddings.word)
    generator = Encoder(gen_cfg, embeddings=kept.embeddings)
    head = MaskedLMHead(gen_cfg, kept.embeddings.word)
    if embedding_sharing == "gdes":
        kept.embeddings = GradientDisentangledEmbeddings(kept.embeddings)  # the generator keeps the tables
    return generator, head


class GradientDisentangledEmbeddings(nn.Module):
    """DeBERTaV3's gradient-disentangled embedding sharing (He et al. 2021, "GDES"), on our embedding
    module: the discriminator embeds with the generator's tables under stop-gradient plus its own
    word-embedding residual E_delta, initialised to zero (E_D = sg(E_G) + E_delta), and its own layer
    norm (initialised as the shared one is). So the discriminator's loss sends no gradient into the
    shared tables (the generator's MLM loss alone trains them: no tug-of-war between the two losses),
    while the discriminator still adapts its word embeddings through E_delta. At initialisation it
    computes exactly what the shared module computes.

    The shared module is the generator's (a submodule there), held here unregistered: the
    discriminator reads it and does not own it."""

    def __init__(self, shared: nn.Module):
        super().__init__()
        self._shared = (shared,)  # a tuple: not registered as a submodule
        # E_delta (V, E), given its zeros: nn.Embedding would otherwise draw a random init, and the
        # modules built after this one would no longer start where they do under "shared"
        self.residual = nn.Embedding(*shared.word.weight.shape, _weight=torch.zeros(shared.word.weight.shape))
        self.norm = nn.LayerNorm(shared.norm.normalized_shape, eps=shared.norm.eps)
        init_weights(self.norm)
        self.dropout = Dropout(shared.dropout.p)

    @property
    def shared(self) -> nn.Module:
        return self._shared[0]

    def forward(self, input_ids: torch.Tensor, segment_ids: torch.Tensor) -> torch.Tensor:
        s = self.shared
        pos = torch.arange(input_ids.shape[1], device=input_ids.device)
        word = F.embedding(input_ids, s.word.weight.detach()) + self.residual(input_ids)  # (B, T, E)
        x = word + F.embedding(pos, s.position.weight.detach())[None] + F.embedding(segment_ids, s.segment.weight.detach())
        return self.dropout(self.norm(x))

    @torch.no_grad()
    def merged_state(self) -> dict[str, torch.Tensor]:
        """The state of a plain embedding module that computes what this one does (in eval)."""
        state = {k: v.detach().clone() for k, v in self.shared.state_dict().items()}
        state["word.weight"] = self.shared.word.weight.detach() + self.residual.weight.detach()
        state.update({f"norm.{k}": v.detach().clone() for k, v in self.norm.state_dict().items()})
        return state


def kept_encoder(encoder: Encoder) -> Encoder:
    """`encoder` itself, or, when it reads gradient-disentangled embeddings, a plain Encoder with the
    same weights and sg(E_G) + E_delta merged into its word table: what a checkpoint stores and
    fine-tuning loads (a copy without gradient path; built on the meta device, so no random draw)."""
    emb = encoder.embeddings
    if not isinstance(emb, GradientDisentangledEmbeddings):
        return encoder
    with torch.device("meta"):
        plain = Encoder(encoder.cfg)
    plain = plain.to_empty(device=emb.residual.weight.device)
    state = {k: v for k, v in encoder.state_dict().items() if not k.startswith("embeddings.")}
    state.update({f"embeddings.{k}": v for k, v in emb.merged_state().items()})
    plain.load_state_dict(state)
    return plain.train(encoder.training)
