"""The ELECTRA paper's analytic FLOP convention, for our `EncoderConfig`.

This is an independent re-implementation of the accounting in the official repository's
`flops_computation.py` (google-research/electra), which produced the paper's "Train FLOPs" column.
Its conventions, all kept here:

* An "operation" is a mathematical operation: an exp or a divide costs one FLOP, like an add.
* A matrix multiply costs 2*m*n*k FLOPs (a multiply and an add per multiply-accumulate).
* Embedding lookups are counted as DENSE one-hot matmuls: 2*E*V per token for the word embedding
  and 2*E*(T + 2) per token for the position (T rows) and segment (2 rows) tables.
* Non-matmul ops use fixed per-element costs: dropout 4 (random number, compare, mask, rescale),
  layer norm 5 (mean, variance, bias, scale), GELU 8 (its tanh approximation), softmax 5
  (max-subtract, exp, sum, divide).
* The MLM output head is evaluated on `OUTPUT_FRAC` = 15.625% of positions (20 of 128), whatever the
  mask rate; the discriminator (and the fine-tuning classifier) head runs at every position.
* Backward = forward, so one training step costs 2 x forward.
* ELECTRA = generator + discriminator, each counted as a full model on its own (the generator's
  input embeddings are counted again even though they are shared, because it embeds its own input).

The script has no entry for the paper's efficiency ablations (Table 5); they are priced by the same
rules (`paper_step`): ELECTRA 15% costs what ELECTRA costs (only the loss weights differ); Replace MLM
is the generator plus a BERT-style model (MLM head at `OUTPUT_FRAC` of positions); All-Tokens MLM is
the generator plus a model whose MLM head runs at EVERY position (output_frac 1) plus the copy head
(`copy_head_flops_per_token`).

One deliberate difference from the script: it counts the attention block's residual layer norm as
5 FLOPs per token instead of 5*H (a typo: `LAYER_NORM_FLOPS * attn_mul`); we count 5*H. That moves
the totals by under 0.1% (ELECTRA-Small: +0.05%); see docs/flops.md.

All functions below return FORWARD FLOPs; per token means per position of a length-T sequence
(attention makes that depend on T).
"""

from __future__ import annotations

from ..choices import ALL_OBJECTIVES, require
from ..model_config import EncoderConfig

DROPOUT_FLOPS = 4  # random number, >=, multiply by mask, multiply by 1/(1-p)
LAYER_NORM_FLOPS = 5  # mean (sum), variance (square and sum), bias (add), scale (multiply)
ACTIVATION_FLOPS = 8  # GELU: 0.5*x*(1 + tanh(sqrt(2/pi)*(x + 0.044715*x^3)))
SOFTMAX_FLOPS = 5  # max/subtract, exp, sum, divide
SIGMOID_FLOPS = 4  # negate, exp, add one, divide (ours: the script has no sigmoid; All-Tokens MLM's copy head)
OUTPUT_FRAC = 0.15625  # share of positions that go through the MLM output softmax (20 of 128)


def block_flops_per_token(cfg: EncoderConfig, seq_len: int) -> dict[str, float]:
    """Forward FLOPs of ONE post-LN transformer block, per token, by term.

    H hidden, A heads, F FFN size, T sequence length:

    - kqv: the Q, K, V projections, 3 matmuls H->H: 3*2*H*H; kqv_bias: their biases, 3*H.
    - attention_scores: Q.K^T, each token against T keys over H (all heads together): 2*H*T.
    - attn_softmax: softmax over T scores per head: 5*T*A; attention_dropout: 4*T*A;
      attention_scale: the 1/sqrt(D) scaling of the scores: T*A.
    - attention_weighted_avg_values: probabilities times V: 2*H*T.
    - attn_output: the output projection H->H: 2*H*H; attn_output_bias: H;
      attn_output_dropout: 4*H; attn_output_residual: the residual add, H;
      attn_output_layer_norm: 5*H.
    - intermediate: FFN in, H->F: 2*H*F; intermediate_bias: F; intermediate_act: GELU, 8*F.
    - output: FFN out, F->H: 2*H*F; output_bias: H; output_dropout: 4*H; output_residual: H;
      output_layer_norm: 5*H.
    """
    h, a, f, t = cfg.hidden_size, cfg.num_heads, cfg.ffn_size, seq_len
    return dict(
        kqv=3 * 2 * h * h,
        kqv_bias=3 * h,
        attention_scores=2 * h * t,
        attn_softmax=SOFTMAX_FLOPS * t * a,
        attention_dropout=DROPOUT_FLOPS * t * a,
        attention_scale=t * a,
        attention_weighted_avg_values=2 * h * t,
        attn_output=2 * h * h,
        attn_output_bias=h,
        attn_output_dropout=DROPOUT_FLOPS * h,
        attn_output_residual=h,
        attn_output_layer_norm=LAYER_NORM_FLOPS * h,
        intermediate=2 * h * f,
        intermediate_act=ACTIVATION_FLOPS * f,
        intermediate_bias=f,
        output=2 * h * f,
        output_bias=h,
        output_dropout=DROPOUT_FLOPS * h,
        output_residual=h,
        output_layer_norm=LAYER_NORM_FLOPS * h,
    )


def input_embedding_flops_per_token(cfg: EncoderConfig, seq_len: int) -> dict[str, float]:
    """Forward FLOPs of the input embeddings, per token, by term (E embedding size, V vocabulary):

    - word_lookup: the word embedding as a dense one-hot matmul, 2*E*V.
    - position_and_segment_lookup: the same for the position (T rows) and segment tables,
      2*E*(T + type_vocab_size) (the script writes T + 2: BERT has 2 segments).
    - add_position_and_segment: the two adds, 2*E.
    - layer_norm: 5*E; dropout: 4*E.
    - projection, projection_bias: only when E != H (ELECTRA's factorised embeddings), the E->H
      dense layer, 2*E*H + H.
    """
    e, h, v = cfg.embedding_size, cfg.hidden_size, cfg.vocab_size
    terms = dict(
        word_lookup=2 * e * v,
        position_and_segment_lookup=2 * e * (seq_len + cfg.type_vocab_size),
        add_position_and_segment=2 * e,
        layer_norm=LAYER_NORM_FLOPS * e,
        dropout=DROPOUT_FLOPS * e,
    )
    if e != h:
        terms.update(projection=2 * h * e, projection_bias=h)
    return terms


def mlm_head_flops_per_token(cfg: EncoderConfig, output_frac: float = OUTPUT_FRAC) -> dict[str, float]:
    """Forward FLOPs of the MLM output head, AVERAGED per token: each term below is computed at a
    predicted position and multiplied by `output_frac` (the script's 15.625%):

    - transform: the dense H->E layer, 2*H*E; transform_bias: E; transform_act: GELU, 8*E;
      transform_layer_norm: 5*E.
    - logits: the matmul against the tied (V, E) word embeddings, 2*E*V.
    - softmax: 5*V; target_word: picking the target's log-probability, 2*V.
    """
    e, h, v = cfg.embedding_size, cfg.hidden_size, cfg.vocab_size
    terms = dict(
        transform=2 * h * e,
        transform_bias=e,
        transform_act=ACTIVATION_FLOPS * e,
        transform_layer_norm=LAYER_NORM_FLOPS * e,
        logits=2 * e * v,
        softmax=SOFTMAX_FLOPS * v,
        target_word=2 * v,
    )
    return {k: output_frac * x for k, x in terms.items()}


def binary_head_flops_per_token(cfg: EncoderConfig) -> dict[str, float]:
    """Forward FLOPs of ELECTRA's discriminator head, per token (it runs at every position):
    dense H->H 2*H*H, its bias H, GELU 8*H, and the H->1 logit 2*H. The script also uses this head,
    at every position, for the inference (fine-tuned classifier) count."""
    h = cfg.hidden_size
    return dict(dense=2 * h * h, dense_bias=h, dense_act=ACTIVATION_FLOPS * h, logit=2 * h)


def copy_head_flops_per_token(cfg: EncoderConfig) -> dict[str, float]:
    """Forward FLOPs of All-Tokens MLM's copy mechanism, per token (it runs at every position):
    the copy logit H->1 2*H and its bias 1, the sigmoid giving D (4), 1 - D (1), and the output
    distribution D x onehot(input) + (1 - D) x softmax over V: (1 - D) x softmax V, D x the one-hot
    input priced densely like the script's lookups V, the add V."""
    h, v = cfg.hidden_size, cfg.vocab_size
    return dict(copy_logit=2 * h, copy_bias=1, copy_sigmoid=SIGMOID_FLOPS, one_minus_copy=1,
                scale_softmax=v, scale_onehot=v, mixture_add=v)


def paper_flops_by_part(
    cfg: EncoderConfig, seq_len: int, head: str, output_frac: float = OUTPUT_FRAC
) -> dict[str, float]:
    """Forward FLOPs per token of one model, split into embeddings / layers / head.
    `head` is "mlm" (BERT, ELECTRA's generator), "binary" (ELECTRA's discriminator, and the
    fine-tuned classifier in the script's inference count) or "none"."""
    parts = {
        "embeddings": sum(input_embedding_flops_per_token(cfg, seq_len).values()),
        "layers": cfg.num_layers * sum(block_flops_per_token(cfg, seq_len).values()),
    }
    if head == "mlm":
        parts["head"] = sum(mlm_head_flops_per_token(cfg, output_frac).values())
    elif head == "binary":
        parts["head"] = sum(binary_head_flops_per_token(cfg).values())
    elif head != "none":
        raise ValueError(f"unknown head {head!r}: mlm, binary or none")
    return parts


def paper_flops_per_token(cfg: EncoderConfig, seq_len: int, head: str, output_frac: float = OUTPUT_FRAC) -> float:
    """Forward FLOPs per token of one model under the paper's convention: L blocks
    (`block_flops_per_token`), the dense-lookup input embeddings (`input_embedding_flops_per_token`)
    and the head (`mlm_head_flops_per_token` or `binary_head_flops_per_token`). A training step on a
    (B, T) batch costs 2 * B * T * this (backward = forward)."""
    return sum(paper_flops_by_part(cfg, seq_len, head, output_frac).values())


def paper_step(preset, objective: str) -> tuple[float, dict[str, float]]:
    """Forward FLOPs of one optimizer step (batch_size sequences of seq_len) and the TRAINING FLOPs
    (2 x forward) by model: {"encoder"} for mlm; {"generator", "discriminator"} for rtd and rtd-15;
    {"generator", "encoder"} for replace-mlm; {"generator", "encoder", "copy_head"} for alltokens-mlm
    (its encoder's MLM head at every position)."""
    model, T = preset.model, preset.schedule.seq_len
    tokens = preset.schedule.batch_size * T
    objective = require("objective", objective, ALL_OBJECTIVES)
    if objective == "mlm":
        models = {"encoder": paper_flops_per_token(model.encoder, T, "mlm")}
    else:
        # a uniform generator (official uniform_generator) is no model: it costs nothing here
        models = {"generator": 0.0 if model.uniform_generator else paper_flops_per_token(model.generator, T, "mlm")}
        if objective in ("rtd", "rtd-15"):
            models["discriminator"] = paper_flops_per_token(model.encoder, T, "binary")
        elif objective == "replace-mlm":
            models["encoder"] = paper_flops_per_token(model.encoder, T, "mlm")
        else:  # alltokens-mlm
            models["encoder"] = paper_flops_per_token(model.encoder, T, "mlm", output_frac=1.0)
            models["copy_head"] = sum(copy_head_flops_per_token(model.encoder).values())
    forward = tokens * sum(models.values())
    return forward, {k: 2 * tokens * v for k, v in models.items()}


def paper_inference_flops(preset) -> float:
    """The script's `get_infer_flops`: one forward of the discriminator/encoder on ONE sequence of
    preset.schedule.seq_len, with the binary head at every position standing in for the classifier."""
    return preset.schedule.seq_len * paper_flops_per_token(preset.model.encoder, preset.schedule.seq_len, "binary")
