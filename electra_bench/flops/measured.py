"""Measured FLOPs: fvcore's `FlopCountAnalysis` on the real forward of one training step.

Units. fvcore counts one multiply-accumulate (MAC) as one unit. Every handle here returns
MAC-equivalents: contractions (linear, matmul, bmm, einsum, the two matmuls inside SDPA) in MACs, and
every other counted op in FLOPs / 2. So

    forward FLOPs = FLOP_PER_MAC (2) x units
    train FLOPs   = TRAIN_OVER_FORWARD (3: backward ~ 2 x forward) x forward FLOPs = 6 x units.

What is counted (see docs/flops.md for the reasoning):

* contractions, exactly: fvcore's handles for linear/matmul/mm/bmm/addmm/einsum, plus
  `aten::scaled_dot_product_attention` (fvcore skips it): Q.K^T and P.V, B*A*T*S*(D + Dv) MACs;
* every other floating-point op at 1 FLOP per element it writes (reductions and losses: per element
  they read): residual adds, biases, GELU, dropout, the attention softmax, the losses, the generator's
  gumbel sampling; except layer_norm at 5 FLOPs per element (fvcore's own estimate; the paper's too);
* zero: data movement, indexing (embedding lookups are gathers), random-number generation, integer
  and boolean logic, comparisons and selection (`ZERO_FLOP_OPS`).

Anything else the trace contains is "unaccounted": its cost is estimated as 1 FLOP per element of its
largest tensor, and `count_forward` raises `UnaccountedFlopsError` when one op kind would carry more
than `UNACCOUNTED_TOLERANCE` (0.1%) of the total, or when the op is opaque (a Python autograd
Function or a scripted call, which could hide a matmul). fvcore's own silent ignore list (dropout,
masked_fill, clamp, relu, ...) does not apply: those ops are counted by the handles below.

Counting is per-sample linear (attention is per sequence), so the step is traced at `COUNT_BATCH`
sequences and scaled to the preset's batch size.
"""

from __future__ import annotations

import dataclasses
import json

import math
import warnings
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable

import torch
from torch import nn

from .. import objectives, special_tokens
from ..errors import BenchError
from ..model import Encoder, SequenceClassifier

FLOP_PER_MAC = 2
TRAIN_OVER_FORWARD = 3  # forward + backward, backward ~ 2 x forward (grads w.r.t. inputs and weights)
UNACCOUNTED_TOLERANCE = 1e-3  # largest share of the total one unaccounted op kind may carry
COUNT_BATCH = 2  # sequences traced; counts scale linearly to the preset's batch size
LAYER_NORM_FLOPS = 5  # per element: mean, variance, normalise, scale, shift (fvcore's estimate)

# Ops that do no floating-point arithmetic worth a FLOP: shapes and views, copies and casts,
# indexing (embedding lookups, gather/scatter), random numbers, integer/boolean logic, comparisons and
# selection (topk, argmax, max). prim:: nodes are always free.
ZERO_FLOP_OPS = frozenset(
    "aten::" + op
    for op in """
    Int ScalarImplicit Bool Float size numel dim to type_as contiguous clone copy_ detach detach_ alias
    view view_as reshape reshape_as flatten unflatten squeeze squeeze_ unsqueeze unsqueeze_ permute
    transpose t numpy_T expand expand_as repeat slice select narrow unbind split split_with_sizes chunk
    cat stack constant_pad_nd roll
    arange full full_like zeros zeros_like ones ones_like empty empty_like new_empty new_full new_zeros
    new_ones fill_ zero_
    embedding gather scatter scatter_ index index_select index_put_ index_fill index_fill_ masked_select
    take_along_dim nonzero
    rand rand_like randn randn_like randint randint_like bernoulli bernoulli_ uniform_ normal_ multinomial
    __and__ __iand__ __or__ __ior__ __xor__ bitwise_not bitwise_and bitwise_or logical_not logical_and
    logical_or floor_divide remainder all any
    eq ne lt le gt ge argmax argmin max min topk sort argsort
    """.split()
)

Handle = Callable[[list, list], float]


class UnaccountedFlopsError(BenchError):
    """The trace holds an op that no handle counts and that is not known to be free, and it would
    carry a visible share of the FLOPs: the count would be silently low."""


def _shape(value) -> list[int] | None:
    try:
        if value.isCompleteTensor():
            return list(value.type().sizes())
    except RuntimeError:
        pass
    return None


def _numel(value) -> int:
    shape = _shape(value)
    return math.prod(shape) if shape is not None else 0


def _elementwise(flops_per_element: float = 1.0, of: str = "output") -> Handle:
    """1 FLOP (or `flops_per_element`) per element of the largest output (of="output") or input
    (of="input": reductions and losses read more than they write), in MAC-equivalents."""

    def handle(inputs: list, outputs: list) -> float:
        values = outputs if of == "output" else inputs
        return flops_per_element * max((_numel(v) for v in values), default=0) / FLOP_PER_MAC

    return handle


def _linear(inputs: list, outputs: list) -> float:
    """x @ W^T (MACs: numel(x) x out_features) plus the bias add (1 FLOP per output element)."""
    x, w = _shape(inputs[0]), _shape(inputs[1])
    macs = math.prod(x) * w[0]
    bias = _numel(outputs[0]) / FLOP_PER_MAC if _shape(inputs[2]) is not None else 0.0
    return macs + bias


def _sdpa(inputs: list, outputs: list) -> float:
    """scaled_dot_product_attention(q (.., T, D), k (.., S, D), v (.., S, Dv)): Q.K^T and P.V,
    prod(..) x T x S x (D + Dv) MACs, plus 1 FLOP per attention score for scale/softmax."""
    q, k, v = (_shape(x) for x in inputs[:3])
    *lead, t, d = q
    s, dv = k[-2], v[-1]
    scores = math.prod(lead) * t * s
    return scores * (d + dv) + scores / FLOP_PER_MAC


_ELEMENTWISE_OUT = """
    add add_ sub sub_ rsub mul mul_ div div_ neg reciprocal abs pow sqrt rsqrt exp log log1p
    tanh sigmoid gelu relu relu_ silu where masked_fill masked_fill_ clamp clamp_ clamp_min minimum
    maximum round floor ceil dropout dropout_ lerp addcmul addcdiv log_sigmoid logaddexp
""".split()
_ELEMENTWISE_IN = """
    sum mean var std norm softmax log_softmax cross_entropy_loss nll_loss
    binary_cross_entropy_with_logits binary_cross_entropy mse_loss logsumexp
""".split()


def op_handles() -> dict[str, Handle]:
    """Handles added to (or replacing) fvcore's defaults, by aten op name."""
    # in-place variants (log_, neg_, ...) cost what their out-of-place forms cost
    inplace = [op + "_" for op in _ELEMENTWISE_OUT if not op.endswith("_")]
    handles: dict[str, Handle] = {"aten::" + op: _elementwise() for op in _ELEMENTWISE_OUT + inplace}
    handles.update({"aten::" + op: _elementwise(of="input") for op in _ELEMENTWISE_IN})
    handles["aten::linear"] = _linear
    handles["aten::scaled_dot_product_attention"] = _sdpa
    handles["aten::layer_norm"] = _elementwise(LAYER_NORM_FLOPS)
    return handles


@dataclass(frozen=True)
class ForwardCount:
    units: float  # MAC-equivalents of one forward (forward FLOPs = 2 x units)
    by_operator: dict[str, float]  # units by op name
    unaccounted: dict[str, float]  # op kind -> estimated units, each under the tolerance


def check_unaccounted(
    total_units: float, skipped: dict[str, float], tolerance: float = UNACCOUNTED_TOLERANCE
) -> dict[str, float]:
    """Estimated units of the ops no handle counted, minus the known-free ones. Raises
    `UnaccountedFlopsError` for an opaque op (Python autograd Function, scripted call) of any size,
    or for an op kind whose estimate exceeds `tolerance` x `total_units`. Returns the rest."""
    left = {k: v for k, v in skipped.items() if k not in ZERO_FLOP_OPS and not k.startswith("prim::")}
    opaque = sorted(k for k in skipped if k.startswith(("prim::PythonOp", "prim::CallFunction")))
    heavy = {k: v for k, v in left.items() if v > tolerance * max(total_units, 1.0)}
    if opaque or heavy:
        parts = [f"{k} (opaque: it may hide a matmul)" for k in opaque]
        share = {k: 100 * v / max(total_units, 1.0) for k, v in heavy.items()}
        parts += [f"{k} (~{share[k]:.2f}% of the counted total)" for k in sorted(heavy)]
        raise UnaccountedFlopsError(
            "measured FLOPs would be too low: no FLOP handle for " + ", ".join(parts)
            + f"; add one in electra_bench/flops/measured.py (tolerance {100 * tolerance:g}%)"
        )
    return left


def _analysis_class():
    # imported here, not at the top: fvcore's import calls the deprecated torch.jit.script, silenced here
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from fvcore.nn import FlopCountAnalysis

    class _Analysis(FlopCountAnalysis):
        """FlopCountAnalysis that also records, for every node no handle counts, the element count
        of its largest tensor (fvcore only keeps the number of such nodes, and drops its ignore list
        silently)."""

        def __init__(self, model: nn.Module, inputs: tuple) -> None:
            super().__init__(model, inputs)
            self.skipped: Counter[str] = Counter()

        def _should_ignore_node(self, node) -> bool:  # fvcore calls it for every node without handle
            kind = node.kind()
            if kind == "prim::PythonOp":
                kind = f"{kind}.{node.pyname()}"
            if not kind.startswith("prim::") or kind.startswith(("prim::PythonOp", "prim::CallFunction")):
                sizes = [_numel(v) for v in list(node.inputs()) + list(node.outputs())]
                self.skipped[kind] += max(sizes, default=0) / FLOP_PER_MAC
            return super()._should_ignore_node(node)

    return _Analysis


def count_forward(module: nn.Module, inputs: tuple, tolerance: float = UNACCOUNTED_TOLERANCE) -> ForwardCount:
    """Trace `module(*inputs)` once with fvcore and count it (see the module docstring). Raises
    `UnaccountedFlopsError` when an op that no handle counts would carry a visible share."""
    analysis = _analysis_class()(module, inputs)
    analysis.set_op_handle(**op_handles())
    analysis.unsupported_ops_warnings(False).uncalled_modules_warnings(False).tracer_warnings("none")
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        by_op = {k: float(v) for k, v in analysis.by_operator().items()}
    total = sum(by_op.values())
    left = check_unaccounted(total, dict(analysis.skipped), tolerance)
    return ForwardCount(units=total, by_operator=by_op, unaccounted=left)


class _LossOf(nn.Module):
    """Adapter for jit tracing: tensors in, the objective's loss out (rng=None: global RNG)."""

    def __init__(self, objective: nn.Module):
        super().__init__()
        self.objective = objective

    def forward(self, input_ids, segment_ids, attention_mask):
        batch = {"input_ids": input_ids, "segment_ids": segment_ids, "attention_mask": attention_mask}
        return self.objective(batch, None).loss


def packed_batch(batch: int, seq_len: int, vocab_size: int, special) -> tuple[torch.Tensor, ...]:
    """A batch as the packer makes it: no padding, [CLS] first, [SEP] last, ordinary ids >= 5."""
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, max(vocab_size, 6), (batch, seq_len), generator=g)
    ids[:, 0], ids[:, -1] = special.cls, special.sep
    segments = torch.zeros(batch, seq_len, dtype=torch.long)
    segments[:, seq_len // 2 :] = 1
    return ids, segments, torch.ones(batch, seq_len, dtype=torch.long)


def _build_uninitialised(factory: Callable[[], nn.Module]) -> nn.Module:
    """Build on the meta device and allocate zeroed CPU storage: skips the (slow, for base/large)
    random init, which cannot change a FLOP count."""
    with torch.device("meta"):
        module = factory()
    module = module.to_empty(device="cpu")
    with torch.no_grad():
        for t in list(module.parameters()) + list(module.buffers()):
            t.zero_()
    return module


def objective_count(preset, objective: str, batch: int = COUNT_BATCH) -> ForwardCount:
    """fvcore count of the training-mode forward of `objectives.build(objective, preset)` on `batch`
    packed sequences of the config's length."""
    special = special_tokens.DEFAULT
    module = _build_uninitialised(lambda: objectives.build(objective, preset, special)).train()
    inputs = packed_batch(batch, preset.schedule.seq_len, preset.model.encoder.vocab_size, special)
    return count_forward(_LossOf(module), inputs)


def inference_count(preset, num_labels: int = 2) -> ForwardCount:
    """fvcore count of the fine-tuned model (encoder + [CLS] classifier, eval mode) on ONE sequence."""
    encoder = preset.model.encoder
    module = _build_uninitialised(lambda: SequenceClassifier(Encoder(encoder), num_labels)).eval()
    return count_forward(module, packed_batch(1, preset.schedule.seq_len, encoder.vocab_size, special_tokens.DEFAULT))


# The traced step is the model and the objective at the sequence length (the optimizer, the schedule and
# the evaluation are not traced; the batch size scales the count). Every knob of those two sections keys the
# cache, so a new one cannot reuse another step's count, except these, which change values, not operations:
_NOT_TRACED = {"output_prior_init", "rtd_temperature", "rtd_temperature_warmup"}
# and for MLM, which traces no generator, the generator's knobs
_GENERATOR_KNOBS = {"generator_size", "generator_layers", "uniform_generator", "embedding_sharing", "untied_generator",
                    "gen_weight", "disc_weight", "disallow_correct"}


def _cache_key(preset, objective: str) -> tuple[Any, ...]:
    knobs = {**dataclasses.asdict(preset.model), **dataclasses.asdict(preset.objective),
             "seq_len": preset.schedule.seq_len}
    drop = _NOT_TRACED | (_GENERATOR_KNOBS if objective == "mlm" else set())
    return objective, json.dumps({k: v for k, v in knobs.items() if k not in drop}, sort_keys=True, default=str)


_STEP_CACHE: dict[tuple, ForwardCount] = {}
_INFER_CACHE: dict[tuple, ForwardCount] = {}


def measured_step(preset, objective: str) -> tuple[float, dict[str, float]]:
    """Forward FLOPs of one optimizer step at preset.schedule.batch_size, and its training FLOPs by op name."""
    key = _cache_key(preset, objective)
    if key not in _STEP_CACHE:
        _STEP_CACHE[key] = objective_count(preset, objective)
    count = _STEP_CACHE[key]
    scale = preset.schedule.batch_size / COUNT_BATCH
    forward = FLOP_PER_MAC * count.units * scale
    breakdown = {op: FLOP_PER_MAC * TRAIN_OVER_FORWARD * u * scale for op, u in count.by_operator.items()}
    return forward, breakdown


def measured_inference_flops(preset) -> float:
    key = (preset.model.encoder, preset.schedule.seq_len)
    if key not in _INFER_CACHE:
        _INFER_CACHE[key] = inference_count(preset)
    return FLOP_PER_MAC * _INFER_CACHE[key].units
