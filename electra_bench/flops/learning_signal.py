"""The learning-signal arithmetic behind ELECTRA's claim, per sequence, and the same counted on the
real objectives.

MLM gets a gradient at the masked positions only (int(mask_prob x T): 76 of 512), each a choice among
V tokens (log2 V = 14.9 bits); RTD gets one binary decision at every position (512 x 1 bit).
Positions with gradient differ 6.7x; bits of target information go the other way (1132 vs 512).

`objective_signal` gives that formula for every objective (the Table 5 ablations included) beside
what the objective modules actually do on a batch (`measured_signal`): which positions of the kept
encoder receive a gradient from the loss, and how many classes the output at such a position chooses
among.
"""

from __future__ import annotations

import dataclasses
import math

import torch
from rich.table import Table

from .. import objectives, presets
from ..choices import ALL_OBJECTIVES
from ..errors import BenchError
from .measured import packed_batch
from ..special_tokens import DEFAULT as SPECIAL


def learning_signal(seq_len: int = 512, mask_prob: float = 0.15, vocab_size: int = 30522) -> dict:
    if seq_len <= 0 or vocab_size <= 1 or not 0 < mask_prob < 1:
        raise BenchError("signal needs --seq-len > 0, --vocab-size > 1 and 0 < --mask-prob < 1")
    mlm_positions = int(mask_prob * seq_len)
    bits = math.log2(vocab_size)
    return {
        "seq_len": seq_len,
        "mask_prob": mask_prob,
        "vocab_size": vocab_size,
        "mlm_positions": mlm_positions,
        "rtd_positions": seq_len,
        "mlm_bits_per_position": bits,
        "rtd_bits_per_position": 1.0,
        "mlm_bits": mlm_positions * bits,
        "rtd_bits": float(seq_len),
        "position_ratio": seq_len / max(1, mlm_positions),
        "bits_ratio": seq_len / (mlm_positions * bits) if mlm_positions else math.inf,
    }


# Per objective: (loss at every position?, a V-way target?). rtd-15 is RTD's binary task on MLM's
# positions; Replace MLM is MLM's; All-Tokens MLM is a V-way choice at every position.
_SHAPE = {"mlm": (False, True), "rtd": (True, False), "rtd-15": (False, False), "replace-mlm": (False, True),
          "alltokens-mlm": (True, True)}


def formula_signal(objective: str, seq_len: int, mask_prob: float, vocab_size: int) -> dict:
    """The arithmetic for one objective: positions with loss per sequence, bits per position, bits."""
    every, v_way = _SHAPE[objective]
    positions = seq_len if every else int(mask_prob * seq_len)
    bits = math.log2(vocab_size) if v_way else 1.0
    return {"positions": positions, "bits_per_position": bits, "bits": positions * bits}


def _signal_preset(seq_len: int, mask_prob: float, vocab_size: int):
    """A narrow one-layer version of `tiny` at the asked shape: the positions that carry loss and the
    output sizes do not depend on the width or depth, and this keeps the count about a second."""
    p = presets.get("tiny")
    narrow = p.with_knobs(vocab_size=vocab_size, embedding_size=16, hidden_size=16, num_layers=1, num_heads=1,
                          ffn_size=32, max_positions=max(seq_len, 2), dropout=0.0, seq_len=seq_len, mask_prob=mask_prob)
    return dataclasses.replace(narrow, objective_overrides={})


def measured_signal(objective: str, seq_len: int, mask_prob: float, vocab_size: int, batch: int = 2,
                    seed: int = 0) -> dict:
    """Counted on the real objective module (built at a small width, `_signal_preset`) and one packed
    batch: a position carries loss when the loss's gradient at the kept encoder's output there is not
    zero; its bits are log2 of the classes the output read from that position chooses among (V for an
    MLM softmax, 2 for a single logit)."""
    p = _signal_preset(seq_len, mask_prob, vocab_size)
    torch.manual_seed(seed)
    m = objectives.build(objective, p, SPECIAL).train()
    kept = m.discriminator if hasattr(m, "discriminator") else m.encoder
    captured: dict = {}
    classes: list[int] = []

    def keep_output(module, args, out):
        out.retain_grad()
        captured["hidden"] = out

    def head_classes(module, args, out):
        if args and args[0] is captured.get("hidden"):  # a head that reads the kept encoder
            classes.append(2 if out.dim() == 2 or out.shape[-1] == 1 else int(out.shape[-1]))

    hooks = [kept.register_forward_hook(keep_output)]
    hooks += [child.register_forward_hook(head_classes) for child in m.children() if child is not kept]
    ids, seg, att = packed_batch(batch, seq_len, vocab_size, SPECIAL)
    try:
        m({"input_ids": ids, "segment_ids": seg, "attention_mask": att}, torch.Generator().manual_seed(seed)).loss.backward()
    finally:
        for h in hooks:
            h.remove()
    carries = captured["hidden"].grad.abs().sum(-1) > 0  # (B, T)
    positions = float(carries.sum()) / batch
    bits = math.log2(max(classes)) if classes else 0.0
    return {"positions": positions, "position_fraction": float(carries.sum() / att.sum()),
            "bits_per_position": bits, "bits": positions * bits}


def objective_signal(seq_len: int = 512, mask_prob: float = 0.15, vocab_size: int = 30522,
                     objective_names: tuple[str, ...] = ALL_OBJECTIVES) -> dict[str, dict]:
    """{objective: {"formula": formula_signal(...), "measured": measured_signal(...)}}."""
    learning_signal(seq_len, mask_prob, vocab_size)  # the same validation
    return {o: {"formula": formula_signal(o, seq_len, mask_prob, vocab_size),
                "measured": measured_signal(o, seq_len, mask_prob, vocab_size)} for o in objective_names}


def signal_table(rows: dict[str, dict], seq_len: int) -> Table:
    """Formula beside measured, one row per objective."""
    t = Table(title=f"learning signal per sequence of {seq_len} tokens: formula | measured on the objective modules")
    for col in ("objective", "formula: positions", "bits/pos", "bits", "measured: positions", "share of tokens",
                "bits/pos", "bits"):
        t.add_column(col, justify="left" if col == "objective" else "right")
    for name, r in rows.items():
        f, m = r["formula"], r["measured"]
        t.add_row(name, f"{f['positions']}", f"{f['bits_per_position']:.1f}", f"{f['bits']:.0f}",
                  f"{m['positions']:g}", f"{m['position_fraction']:.3f}", f"{m['bits_per_position']:.1f}",
                  f"{m['bits']:.0f}")
    return t
