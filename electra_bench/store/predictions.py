"""Per-example dev predictions of a run's scores, stored so that statistics can resample examples.

Every score row (objective, pre-training seed, checkpoint, task, evaluation seed) is the metric of one
array of dev predictions. Storing those arrays lets the Multi-Bootstrap (summarise/bootstrap.py) resample
the dev examples together with the pre-training seeds, instead of treating a dev-set score as exact.

```
predictions/
  labels/<task>.npz                                   once per task: labels_<split>, index_<split>, meta
  <objective>/seed-<k>/frac-<F>/<task>@<protocol>.npz preds_<split> (evaluation seeds x examples), seeds
```

One file per protocol: a run scored under several readings (`--protocol probe,finetune-tuned`) scores the
same encoder on the same task once per reading, and each reading's statistics resample its own predictions.
Runs stored before the protocol was in the name have `<task>.npz` (whichever reading wrote it last); it is
read when no `<task>@<protocol>.npz` exists, and the row check (summarise/bootstrap_inputs.py) refuses it
where it belongs to another reading.

`index_<split>` are the dev examples scored (all of them, or the fixed sample of `--quick`), in the
order of the prediction columns; `meta` holds the dev set's sha256 (texts and labels of those examples), so
a prediction file is never read against other data. Class ids are stored as int16, regression outputs as
float32: about 1.2 MB for a run of 4 pre-training seeds x 2 objectives x 7 checkpoints on ebs-2.
Written before the score rows they belong to (atomically), so a stored row's predictions exist; runs made
before this have none, and their statistics fall back to seeds only (and say so).
"""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import atomic_io
from ..errors import BenchError, at
from .layout import fraction_dir

DIR = "predictions"


@dataclass
class TaskPredictions:
    """One encoder's predictions on one task: per evaluation split, (seeds, examples)."""

    task: str
    protocol: str  # the reading whose score rows these predictions give
    seeds: list[int]
    preds: dict[str, np.ndarray]  # split -> (len(seeds), N)
    labels: dict[str, np.ndarray]  # split -> (N,)
    index: dict[str, np.ndarray]  # split -> (N,) dev example indices
    dev_sha256: str


def collect(task_name: str, records: dict[int, dict], protocol: str) -> TaskPredictions:
    """From `evaluate`'s records per evaluation seed ({seed: {split: (preds, labels, index, sha256 of the
    scored examples)}}, score/finetune.py) under `protocol` to one TaskPredictions; every seed scores the
    same examples."""
    seeds = sorted(records)
    splits = sorted(records[seeds[0]])
    preds, labels, index, shas = {}, {}, {}, []
    for split in splits:
        _, y, idx, sha = records[seeds[0]][split]
        preds[split] = np.stack([_compact(records[s][split][0]) for s in seeds])
        labels[split], index[split] = _compact(y), np.asarray(idx, dtype=np.int32)
        shas.append(sha)
    return TaskPredictions(task_name, protocol, seeds, preds, labels, index, hashlib.sha256("".join(shas).encode()).hexdigest())


def _compact(a) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype.kind in "iub" or (a.dtype.kind == "f" and np.all(a == np.round(a)) and np.abs(a).max(initial=0) < 2**15):
        return a.astype(np.int16)
    return a.astype(np.float32)


def _npz_bytes(arrays: dict) -> bytes:
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    return buf.getvalue()


class PredictionStore:
    def __init__(self, run_root: str | Path):
        self.root = Path(run_root) / DIR

    def labels_path(self, task: str) -> Path:
        return self.root / "labels" / f"{task}.npz"

    def path(self, objective: str, pretrain_seed: int, fraction: float, task: str, protocol: str | None) -> Path:
        """The file of one encoder's predictions on `task` under `protocol` (None: the unkeyed file of runs
        stored before the protocol was in the name)."""
        name = task if protocol is None else f"{task}@{protocol}"
        return self.root / objective / f"seed-{int(pretrain_seed)}" / fraction_dir(fraction) / f"{name}.npz"

    def write(self, objective: str, pretrain_seed: int, fraction: float, p: TaskPredictions) -> None:
        """The labels once per task (checked against the stored dev hash), then this encoder's predictions."""
        lp = self.labels_path(p.task)
        if lp.is_file():
            stored = self.labels(p.task)
            if stored["dev_sha256"] != p.dev_sha256:
                raise BenchError(f"{at(lp)}: the dev set of {p.task} differs from the one this run's predictions "
                                 f"were stored for (sha256 {stored['dev_sha256'][:12]} vs {p.dev_sha256[:12]})")
        else:
            lp.parent.mkdir(parents=True, exist_ok=True)
            arrays = {f"labels_{s}": y for s, y in p.labels.items()}
            arrays.update({f"index_{s}": i for s, i in p.index.items()})
            arrays["meta"] = np.array(json.dumps({"task": p.task, "dev_sha256": p.dev_sha256,
                                                  "splits": sorted(p.labels)}))
            atomic_io.write_bytes(lp, _npz_bytes(arrays))
        out = self.path(objective, pretrain_seed, fraction, p.task, p.protocol)
        out.parent.mkdir(parents=True, exist_ok=True)
        arrays = {f"preds_{s}": a for s, a in p.preds.items()}
        arrays["seeds"] = np.asarray(p.seeds, dtype=np.int32)
        arrays["meta"] = np.array(json.dumps({"dev_sha256": p.dev_sha256}))
        atomic_io.write_bytes(out, _npz_bytes(arrays))

    def labels(self, task: str) -> dict:
        """{"dev_sha256", "splits", "labels": {split: array}, "index": {split: array}}."""
        path = self.labels_path(task)
        with _open(path) as z:
            meta = json.loads(str(z["meta"]))
            return {**meta, "labels": {s: z[f"labels_{s}"] for s in meta["splits"]},
                    "index": {s: z[f"index_{s}"] for s in meta["splits"]}}

    def read(self, objective: str, pretrain_seed: int, fraction: float, task: str, protocol: str | None
             ) -> dict | None:
        """{"seeds": [...], "preds": {split: (seeds, N)}, "dev_sha256", "path"} of `protocol`'s file, else of
        the unkeyed file an older run stored (which may be another reading's: the caller checks it against
        the score rows); None when neither is stored."""
        path = self.path(objective, pretrain_seed, fraction, task, protocol)
        if not path.is_file():
            path = self.path(objective, pretrain_seed, fraction, task, None)
            if not path.is_file():
                return None
        with _open(path) as z:
            meta = json.loads(str(z["meta"]))
            preds = {k[len("preds_"):]: z[k] for k in z.files if k.startswith("preds_")}
            return {"seeds": z["seeds"].tolist(), "preds": preds, "dev_sha256": meta["dev_sha256"], "path": path}

    def has_any(self) -> bool:
        return (self.root / "labels").is_dir() and any((self.root / "labels").glob("*.npz"))


def _open(path: Path):
    if not path.is_file():
        raise BenchError(f"{at(path)}: prediction file not found")
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise BenchError(f"{at(path)}: unreadable prediction file ({e})") from None
