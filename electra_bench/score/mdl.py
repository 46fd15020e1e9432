"""Online-code (MDL) probing: how many bits a linear probe needs to transmit a task's labels.

Voita & Titov (EMNLP 2020, "Information-Theoretic Probing with Minimum Description Length"): probe
accuracy barely tells a pre-trained encoder from a random one (a linear model on random features is a
strong baseline), while the description length of the labels under an online code does. The code sends
the labels in blocks: the first block with the uniform code (log2 K bits a label), then each next block
with a probe fit on every block before it, paying -log2 p(label) per example. Better features make the
probe right sooner on less data, so the total is shorter. Blocks end at the paper's fractions of the data
(0.1%, 0.2%, 0.4%, ..., 50%, 100%).

Classification only: a regression task has no label alphabet for the uniform code (the paper's tasks are
all classification). The probe is the `probe` protocol's model (scikit-learn's standardised logistic
regression on the same features, finetune.py) with its regularisation chosen per block on a held-out tenth
of the data already sent: the paper stops its probes early on held-out data for the same reason, since a
probe fit to convergence on a few hundred 512-dimensional examples is confidently wrong, and its code is
then longer than the uniform one (measured: 1.37 bits an example on binary tasks at C = 1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# the paper's block ends, as fractions of the transmitted data
BLOCK_ENDS = (0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.0625, 0.125, 0.25, 0.5, 1.0)
# inverse regularisation strengths tried per block (scikit-learn's C); the smallest while a block is too
# small to hold a tenth out
C_GRID = (0.001, 0.01, 0.1, 1.0)
MIN_HELD_OUT = 10


@dataclass(frozen=True)
class OnlineCode:
    """One transmission: its total and the uniform code's, in bits, over `examples` labels."""

    bits: float
    uniform_bits: float
    examples: int

    @property
    def compression(self) -> float:
        """Uniform / online: 1 when the probe learned nothing a label could be told by."""
        return self.uniform_bits / self.bits

    @property
    def bits_per_example(self) -> float:
        return self.bits / self.examples


def block_ends(n: int, ends=BLOCK_ENDS) -> list[int]:
    """Example counts where blocks end: increasing, at least 1 for the first (sent uniformly), n last."""
    out = []
    for f in ends:
        k = min(n, max(1, int(round(f * n))))
        if not out or k > out[-1]:
            out.append(k)
    if out[-1] != n:
        out.append(n)
    return out


def _block_bits(X_fit, y_fit, X_next, y_next, num_labels: int) -> float:
    """-log2 p of the next block's labels under a probe fit on the n examples before it. The probe's
    probabilities are blended with one pseudo-count per label, p = (n p_probe + 1) / (n + K): a label the
    first few blocks never showed would otherwise cost -log2(0) bits. While only one label has been seen no
    classifier can be fit, and the code is the add-one frequencies alone."""
    n = len(y_fit)
    proba = np.zeros((len(y_next), num_labels))
    if len(np.unique(y_fit)) < 2:
        proba += np.bincount(y_fit, minlength=num_labels) / n
    else:
        model = _probe(_chosen_c(X_fit, y_fit, num_labels)).fit(X_fit, y_fit)
        proba[:, model.classes_] = model.predict_proba(X_next)
    proba = (n * proba + 1.0) / (n + num_labels)
    return float(-np.log2(proba[np.arange(len(y_next)), y_next]).sum())


def _probe(c: float):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(C=c, max_iter=2000))


def _chosen_c(X, y, num_labels: int) -> float:
    """The C of C_GRID whose probe, fit on the first nine tenths of what was sent, codes the last tenth in
    the fewest bits (the data arrive shuffled, so the last tenth is a random one)."""
    held = len(y) // 10
    fit_part = y[: len(y) - held]
    if held < MIN_HELD_OUT or len(np.unique(fit_part)) < 2:
        return C_GRID[0]
    best = None
    for c in C_GRID:
        model = _probe(c).fit(X[: len(y) - held], fit_part)
        proba = np.full((held, num_labels), 1e-12)
        proba[:, model.classes_] = np.clip(model.predict_proba(X[len(y) - held:]), 1e-12, None)
        bits = float(-np.log2(proba[np.arange(held), y[len(y) - held:]]).sum())
        if best is None or bits < best[0]:
            best = (bits, c)
    return best[1]


def online_codelength(X: np.ndarray, y: np.ndarray, num_labels: int, seed: int, ends=BLOCK_ENDS) -> OnlineCode:
    """The online code of labels `y` (ints in [0, num_labels)) given features `X` (N, F), the examples sent
    in a seed-dependent order (the code's length depends on which examples come first)."""
    y = np.asarray(y, dtype=np.int64)
    if len(y) == 0:
        raise ValueError("no examples to transmit")
    if y.min() < 0 or y.max() >= num_labels:
        raise ValueError(f"labels must lie in [0, {num_labels})")
    order = np.random.default_rng([seed, 13]).permutation(len(y))
    X, y = np.asarray(X)[order], y[order]
    cuts = block_ends(len(y), ends)
    bits = cuts[0] * math.log2(num_labels)  # the first block: the uniform code
    for start, end in zip(cuts, cuts[1:]):
        bits += _block_bits(X[:start], y[:start], X[start:end], y[start:end], num_labels)
    return OnlineCode(bits=bits, uniform_bits=len(y) * math.log2(num_labels), examples=len(y))
