"""The encoder both objectives share: a post-LN BERT, read top to bottom.

Shapes: B batch, T sequence length, E embedding size, H hidden size, P masked positions per sequence,
V vocabulary size. MLM (BERT) uses one `Encoder` + `MaskedLMHead`; RTD (ELECTRA) uses two `Encoder`s
(a narrow generator and the discriminator) that share one `Embeddings` module, plus a `MaskedLMHead` on
the generator and a `DiscriminatorHead`. The objectives live in `objectives.py`, so a budget compares
objectives, never architectures.

The analytic FLOP formula for this model (the paper's convention) is
`electra_bench.flops.paper.paper_flops_per_token(cfg, seq_len, head)`; measured FLOPs come from fvcore on this exact forward (`flops/measured.py`).
"""

from __future__ import annotations

import functools
import warnings

import torch
import torch.nn.functional as F
from torch import nn

from .choices import PRECISIONS
from .errors import BenchError
from .model_config import EncoderConfig, generator_config  # noqa: F401  (the model's config, importable without torch


def _cpu_eager(x: torch.Tensor) -> bool:
    """Whether `x` runs through eager CPU kernels: not traced (fvcore counts FLOPs on a trace, where dropout
    and attention must appear as the ops they stand for), not compiled, not on an accelerator."""
    return x.device.type == "cpu" and not torch.jit.is_tracing() and not torch.compiler.is_compiling()


def dropout(x: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """Inverted dropout. On eager CPU the mask comes from 16-bit random integers rather than `bernoulli_`.

    Why: torch's CPU dropout draws every mask element with `bernoulli_`, a serial Mersenne-Twister draw at about
    10 ns per element: 15% of a `small` training step (docs/performance.md profiles it). One 64-bit `random_`
    draw gives four 16-bit uniforms (about 1.3 ns per element); an element is dropped when its uniform is
    below round(p x 65536), so the rate is that / 65536 (0.1 -> 0.100006) and kept elements are scaled by
    1 / (1 - rate): the expectation is exact. Draws come from torch's global generator, like F.dropout's.
    CUDA (Philox), torch.compile and FLOP tracing use F.dropout."""
    if not _cpu_eager(x):  # traced: always the dropout op, p = 0 included, as FLOP counts have always seen it
        return F.dropout(x, p, training)
    if not training or p == 0:
        return x
    drop = round(p * 65536)
    n = x.numel()
    bits = torch.empty((n + 3) // 4, dtype=torch.int64).random_(-(2**63), None)  # the full 64 bits: four int16 each
    keep = bits.view(torch.int16)[:n].view(x.shape) >= drop - 32768  # (x.shape) bool, P(keep) = 1 - drop/65536
    return x * keep.to(x.dtype).mul_(65536 / (65536 - drop))


class Dropout(nn.Module):
    """`dropout` as a module (nn.Dropout's interface: `p`, active in training mode)."""

    def __init__(self, p: float):
        super().__init__()
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"


class Embeddings(nn.Module):
    """Token + position + segment embeddings of size E. ELECTRA shares this whole module between
    generator and discriminator (the official code's `electra/embeddings` scope)."""

    def __init__(self, cfg: EncoderConfig):
        super().__init__()
        self.word = nn.Embedding(cfg.vocab_size, cfg.embedding_size)
        self.position = nn.Embedding(cfg.max_positions, cfg.embedding_size)
        self.segment = nn.Embedding(cfg.type_vocab_size, cfg.embedding_size)
        self.norm = nn.LayerNorm(cfg.embedding_size, eps=cfg.layer_norm_eps)
        self.dropout = Dropout(cfg.dropout)

    def forward(self, input_ids: torch.Tensor, segment_ids: torch.Tensor) -> torch.Tensor:
        T = input_ids.shape[1]
        pos = torch.arange(T, device=input_ids.device)
        x = self.word(input_ids) + self.position(pos)[None] + self.segment(segment_ids)  # (B, T, E)
        return self.dropout(self.norm(x))


class SelfAttention(nn.Module):
    def __init__(self, cfg: EncoderConfig):
        super().__init__()
        self.num_heads = cfg.num_heads
        self.qkv = nn.Linear(cfg.hidden_size, 3 * cfg.hidden_size)
        self.out = nn.Linear(cfg.hidden_size, cfg.hidden_size)
        self.attn_dropout = cfg.dropout

    def forward(self, x: torch.Tensor, attn_mask: torch.Tensor | None) -> torch.Tensor:
        B, T, H = x.shape
        # One (H, 3H) matmul for q, k and v: its weight rows are q's, then k's, then v's.
        q, k, v = self.qkv(x).view(B, T, 3, self.num_heads, H // self.num_heads).permute(2, 0, 3, 1, 4)  # 3 x (B, A, T, D)
        p = self.attn_dropout if self.training else 0.0
        if p > 0 and _cpu_eager(x):
            # SDPA's CPU kernel with dropout is this same math path, but draws its mask with bernoulli_
            scores = (q * q.shape[-1] ** -0.5) @ k.transpose(-1, -2)  # (B, A, T, T)
            if attn_mask is not None:
                scores = scores.masked_fill(~attn_mask, float("-inf"))
            y = dropout(scores.softmax(-1), p, True) @ v  # (B, A, T, D)
        else:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=p)  # (B, A, T, D)
        return self.out(y.transpose(1, 2).reshape(B, T, H))  # (B, T, H)


class Block(nn.Module):
    """Post-LN transformer block, as BERT and ELECTRA: x = LN(x + f(x))."""

    def __init__(self, cfg: EncoderConfig):
        super().__init__()
        self.attn = SelfAttention(cfg)
        self.attn_norm = nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps)
        self.ffn_in = nn.Linear(cfg.hidden_size, cfg.ffn_size)
        self.ffn_out = nn.Linear(cfg.ffn_size, cfg.hidden_size)
        self.ffn_norm = nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps)
        self.dropout = Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor, attn_mask: torch.Tensor | None) -> torch.Tensor:
        x = self.attn_norm(x + self.dropout(self.attn(x, attn_mask)))  # (B, T, H)
        h = F.gelu(self.ffn_in(x))  # (B, T, F)
        return self.ffn_norm(x + self.dropout(self.ffn_out(h)))  # (B, T, H)


class Encoder(nn.Module):
    """Embeddings (optionally shared) -> E->H projection -> L blocks. Returns (B, T, H)."""

    def __init__(self, cfg: EncoderConfig, embeddings: Embeddings | None = None):
        super().__init__()
        self.cfg = cfg
        self.embeddings = embeddings if embeddings is not None else Embeddings(cfg)
        E = self.embeddings.word.embedding_dim
        self.embed_proj = nn.Linear(E, cfg.hidden_size) if E != cfg.hidden_size else None
        self.layers = nn.ModuleList(Block(cfg) for _ in range(cfg.num_layers))
        # Shared embeddings were initialised by their owner: re-initialising them here would draw new
        # values, and RTD's discriminator would no longer start from the encoder MLM starts from.
        for name, module in self.named_modules():
            if embeddings is None or not (name == "embeddings" or name.startswith("embeddings.")):
                init_weights(module)

    def forward(
        self, input_ids: torch.Tensor, segment_ids: torch.Tensor, attention_mask: torch.Tensor,
        padded: bool | None = None,
    ) -> torch.Tensor:
        """`padded`: whether any attention_mask entry is 0, decided by the caller on the host (from the
        batch's lengths, before it is moved to the device); None: read from `attention_mask`."""
        x = self.embeddings(input_ids, segment_ids)  # (B, T, E)
        if self.embed_proj is not None:
            x = self.embed_proj(x)  # (B, T, H)
        # Packed pre-training batches have no padding; skipping the mask keeps SDPA on its fastest kernel.
        if padded is None:
            padded = has_padding(attention_mask)
        mask = attention_mask[:, None, None, :].bool() if padded else None  # (B, 1, 1, T)
        for layer in self.layers:
            x = layer(x, mask)
        return x


class MaskedLMHead(nn.Module):
    """BERT/ELECTRA MLM head: H -> E (GELU, LN), then logits against the tied word embeddings.
    Computed only at the P masked positions: the full (B, T, V) head would cost about as much as
    the whole small encoder."""

    def __init__(self, cfg: EncoderConfig, word_embeddings: nn.Embedding):
        super().__init__()
        E = word_embeddings.embedding_dim
        self.transform = nn.Linear(cfg.hidden_size, E)
        self.norm = nn.LayerNorm(E, eps=cfg.layer_norm_eps)
        self.word_embeddings = word_embeddings  # tied: (V, E)
        self.bias = nn.Parameter(torch.zeros(cfg.vocab_size))
        init_weights(self.transform)

    def forward(self, hidden: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        B, P = positions.shape
        idx = positions[..., None].expand(B, P, hidden.shape[-1])
        h = torch.gather(hidden, 1, idx)  # (B, P, H)
        h = self.norm(F.gelu(self.transform(h)))  # (B, P, E)
        return h @ self.word_embeddings.weight.t() + self.bias  # (B, P, V)


class DiscriminatorHead(nn.Module):
    """ELECTRA's replaced-token head: dense H->H with GELU, then one logit per token."""

    def __init__(self, cfg: EncoderConfig):
        super().__init__()
        self.dense = nn.Linear(cfg.hidden_size, cfg.hidden_size)
        self.out = nn.Linear(cfg.hidden_size, 1)
        self.apply(init_weights)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.out(F.gelu(self.dense(hidden))).squeeze(-1)  # (B, T)


class SequenceClassifier(nn.Module):
    """Fine-tuning: a pre-trained encoder plus the BERT/ELECTRA head on [CLS]: pooler (dense, tanh),
    dropout, dense to labels; both new at fine-tuning time. `num_labels == 1` is regression (STS-B)."""

    def __init__(self, encoder: Encoder, num_labels: int):
        super().__init__()
        self.encoder = encoder
        self.pooler = nn.Linear(encoder.cfg.hidden_size, encoder.cfg.hidden_size)
        self.dropout = Dropout(encoder.cfg.dropout)
        self.classifier = nn.Linear(encoder.cfg.hidden_size, num_labels)
        init_weights(self.pooler)
        init_weights(self.classifier)

    def forward(self, input_ids, segment_ids, attention_mask, padded: bool | None = None) -> torch.Tensor:
        """`padded` as `Encoder.forward`: decided on the host copy of the batch (None: read on the device)."""
        cls = self.encoder(input_ids, segment_ids, attention_mask, padded)[:, 0]  # (B, H)
        return self.classifier(self.dropout(torch.tanh(self.pooler(cls))))  # (B, num_labels)


def has_padding(attention_mask: torch.Tensor) -> bool:
    """Whether a batch has padding (some attention_mask entry is 0).

    Call it on the host copy of the batch: on a CPU tensor it is a cheap read, on a CUDA tensor it waits for
    the device (a host sync), and inside torch.compile it would break the graph, so there it answers True
    (the mask is applied; with no padding the result is the same up to the kernel's rounding)."""
    if torch.compiler.is_compiling():
        return True
    if attention_mask.device.type == "cpu":  # read with numpy: no torch op, so nothing a step's count of reads sees
        return not attention_mask.numpy().all()
    return not bool(attention_mask.all())


def init_weights(module: nn.Module) -> None:
    """BERT's initialisation: N(0, 0.02) weights, zero biases, unit LayerNorm."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, std=0.02)
        if getattr(module, "bias", None) is not None:
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.LayerNorm):
        nn.init.ones_(module.weight)
        nn.init.zeros_(module.bias)


def count_parameters(module: nn.Module) -> int:
    """Unique parameters (tied/shared tensors counted once)."""
    return sum(p.numel() for p in {id(p): p for p in module.parameters()}.values())


# ---- precision -----------------------------------------------------------------------------------------



@functools.lru_cache(maxsize=1)
def cpu_bf16_features() -> tuple[str, ...]:
    """The CPU's native bf16 instruction sets from /proc/cpuinfo (x86: AVX512-BF16, AMX-BF16; Arm: bf16);
    empty where the CPU has none or the file cannot be read (non-Linux)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    flags = set(line.split(":", 1)[1].split())
                    return tuple(sorted(flags & {"avx512_bf16", "amx_bf16", "bf16"}))
    except OSError:
        pass
    return ()


def cpu_has_native_bf16() -> bool:
    """Whether bf16 matmuls run natively on this CPU. Without AVX512-BF16/AMX (e.g. an AVX2-only CPU)
    torch emulates them, far slower than fp32 (docs/performance.md measures it)."""
    return bool(cpu_bf16_features())


def resolve_precision(precision: str, device: torch.device | str, allow_emulated_bf16: bool = False) -> str:
    """'fp32' or 'bf16' for `precision` in PRECISIONS on `device`: the one rule the trainer, its memory
    check and bench_train share. auto: bf16 autocast on CUDA, fp32 on CPU (the default, whose numbers are
    pinned). bf16 on a CPU without native bf16 is refused (BenchError) unless `allow_emulated_bf16` (then it
    warns): emulated, it runs over ten times slower than fp32 (docs/performance.md measures it)."""
    if precision not in PRECISIONS:
        raise BenchError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    dev = torch.device(device)
    if precision == "auto":
        return "bf16" if dev.type == "cuda" else "fp32"
    if precision == "bf16" and dev.type == "cpu" and not cpu_has_native_bf16():
        msg = ("--precision bf16: this CPU has no native bf16 (no AVX512-BF16 or AMX-BF16 in its flags), so "
               "torch emulates it, over ten times slower than fp32 (docs/performance.md)")
        if not allow_emulated_bf16:
            raise BenchError(msg + "; use --precision fp32, or pass --allow-emulated-bf16")
        warnings.warn(msg, RuntimeWarning, stacklevel=2)
    return precision


def autocast(device: torch.device | str, precision: str):
    """The training step's autocast context for a resolved precision ('fp32': disabled)."""
    dev = torch.device(device)
    return torch.autocast(dev.type, dtype=torch.bfloat16, enabled=precision == "bf16")
