"""Task metrics, computed with scikit-learn and scipy, reported on the paper's 0-100 scale.

Scale (one for every metric, as the ELECTRA and GLUE papers print them):
- "accuracy": fraction correct x 100, in [0, 100];
- "f1": binary F1 of the positive class (label 1) x 100, in [0, 100];
- "mcc": Matthews correlation x 100, in [-100, 100];
- "pearson", "spearman": correlation coefficient x 100, in [-100, 100].

Undefined values are reported as 0, never NaN, so an aggregate over tasks stays a number: a constant
prediction has no correlation with the labels (Pearson/Spearman 0, as scikit-learn already does for MCC),
and F1 with no predicted or true positives is 0 (scikit-learn's `zero_division=0`). An untrained encoder
that predicts one class therefore scores MCC 0 / F1 0, which is the honest reading.

scikit-learn's and scipy's metric functions are imported where they are used: together they take ~3 s
to import, and `report`/`check`, which read stored scores, never call them.
"""

from __future__ import annotations

import math
import warnings
from typing import Callable, Iterable, Sequence

import numpy as np

from ..errors import BenchError

SCALE = 100.0

CLASSIFICATION = ("accuracy", "f1", "mcc")
REGRESSION = ("pearson", "spearman")
METRICS = CLASSIFICATION + REGRESSION

def _accuracy(pred: np.ndarray, gold: np.ndarray) -> float:
    from sklearn.metrics import accuracy_score

    return float(accuracy_score(gold, pred))


def _f1(pred: np.ndarray, gold: np.ndarray) -> float:
    from sklearn.metrics import f1_score

    return float(f1_score(gold, pred, pos_label=1, average="binary", zero_division=0))


def _mcc(pred: np.ndarray, gold: np.ndarray) -> float:
    from sklearn.metrics import matthews_corrcoef

    return float(matthews_corrcoef(gold, pred))


def _correlation(fn: Callable) -> Callable[[np.ndarray, np.ndarray], float]:
    def compute(pred: np.ndarray, gold: np.ndarray) -> float:
        pred = pred.astype(float)
        gold = gold.astype(float)
        if len(pred) < 2 or np.all(pred == pred[0]) or np.all(gold == gold[0]):
            return 0.0  # undefined: no variation to correlate
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = fn(pred, gold)[0]
        r = float(r)
        return 0.0 if math.isnan(r) else r

    return compute


def _pearson(pred: np.ndarray, gold: np.ndarray) -> float:
    from scipy.stats import pearsonr

    return _correlation(pearsonr)(pred, gold)


def _spearman(pred: np.ndarray, gold: np.ndarray) -> float:
    from scipy.stats import spearmanr

    return _correlation(spearmanr)(pred, gold)


_FUNCTIONS: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
    "accuracy": _accuracy,
    "f1": _f1,
    "mcc": _mcc,
    "pearson": _pearson,
    "spearman": _spearman,
}


def _as_array(values: Sequence | np.ndarray, what: str) -> np.ndarray:
    if hasattr(values, "detach"):  # a torch tensor, without importing torch here
        values = values.detach().cpu().numpy()
    arr = np.asarray(values)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise BenchError(f"{what} must be a flat sequence, got shape {tuple(arr.shape)}")
    return arr


def compute(metric_names: Iterable[str] | str, predictions, labels) -> dict[str, float]:
    """Each named metric of `predictions` against `labels`, on the 0-100 scale.

    Classification metrics take label ids (ints); correlations take real-valued scores. Unknown metric
    names, empty inputs or mismatched lengths raise BenchError.
    """
    names = [metric_names] if isinstance(metric_names, str) else list(metric_names)
    unknown = [n for n in names if n not in _FUNCTIONS]
    if unknown:
        raise BenchError(f"unknown metric(s) {', '.join(unknown)}: choose from {', '.join(METRICS)}")
    pred = _as_array(predictions, "predictions")
    gold = _as_array(labels, "labels")
    if len(pred) != len(gold):
        raise BenchError(f"{len(pred)} predictions for {len(gold)} labels")
    if len(pred) == 0:
        raise BenchError("no predictions to score")
    out = {}
    for name in names:
        if name in CLASSIFICATION:
            for arr, what in ((pred, "predictions"), (gold, "labels")):
                if arr.dtype.kind == "f" and np.any(arr != np.round(arr)):
                    raise BenchError(f"metric '{name}' needs class ids, got real-valued {what}")
            p, g = pred.astype(np.int64), gold.astype(np.int64)
        else:
            p, g = pred, gold
        out[name] = _FUNCTIONS[name](p, g) * SCALE
    return out
