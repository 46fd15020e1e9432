"""Where everything of a run lives on disk: the one place that knows the directory layouts.

A pre-training run (`electra-bench pretrain --out DIR`, or one seed of a compare run):

    DIR/run.json              the plan and resolved config; a rerun must match it
    DIR/log.jsonl             training and diagnostics rows (pretrain/trainer.py)
    DIR/tokenizer/            the tokenizer the data was encoded with (fine-tuning uses the same)
    DIR/checkpoints/frac-F/   the kept encoder at budget fraction F (pretrain/checkpoint.py)
    DIR/state/                the newest resumable state (removed when the run is done)
    DIR/done.json             written last: the run's summary
    DIR/tensorboard/          log.jsonl as TensorBoard scalars, with the optional tensorboard package
                              (pretrain/tensorboard_log.py)

A compare run (`results/<run-id>/`, store/runs.py):

    config.json  provenance.json  history.jsonl  scores.jsonl  summary.json  report.md  report.txt
    plots/  .lock  references.jsonl (external checkpoints scored beside the run, when any)
    tensorboard/<objective>/         its score-vs-FLOPs curves, with the optional tensorboard package
                                     (present/tensorboard_curves.py)
    pretrain/<objective>/seed-<k>/   a pre-training run as above

An ablation run (`electra-bench ablate`, experiments/ablate.py) has the same layout with
`ablation.json` (its Table 5) in place of summary.json and plots/.

A generator-size sweep (`electra-bench sweep`, experiments/sweep.py) is a run whose points are runs:

    config.json  provenance.json  history.jsonl  sweep.json  report.md  report.txt  plots/  .lock
    points/gen-<size>/   one compare-layout run per generator size (objective rtd)
    points/bert/         the MLM reference and the untrained encoder (a compare-layout run)
"""

from __future__ import annotations

from pathlib import Path

# A checkpoint's metadata names its tokenizer relative to itself (checkpoints/frac-F/ -> tokenizer/),
# so a pre-training directory can be moved or copied as a whole.
TOKENIZER_FROM_CHECKPOINT = "../../tokenizer"


def fraction_dir(fraction: float) -> str:
    return f"frac-{fraction:.4f}"


class PretrainLayout:
    def __init__(self, root: str | Path):
        self.root = Path(root)

    run_file = property(lambda self: self.root / "run.json")
    log = property(lambda self: self.root / "log.jsonl")
    tokenizer = property(lambda self: self.root / "tokenizer")
    checkpoints = property(lambda self: self.root / "checkpoints")
    state = property(lambda self: self.root / "state")
    done = property(lambda self: self.root / "done.json")
    tensorboard = property(lambda self: self.root / "tensorboard")

    def checkpoint(self, fraction: float) -> Path:
        return self.checkpoints / fraction_dir(fraction)


def checkpoint_tokenizer(ckpt_dir: str | Path, meta: dict) -> Path:
    """The tokenizer a checkpoint was trained with (its metadata's relative path, as written)."""
    return (Path(ckpt_dir) / meta.get("tokenizer", TOKENIZER_FROM_CHECKPOINT)).resolve()


class RunLayout:
    def __init__(self, root: str | Path):
        self.root = Path(root)

    config = property(lambda self: self.root / "config.json")
    provenance = property(lambda self: self.root / "provenance.json")  # of the invocation that created the run
    history = property(lambda self: self.root / "history.jsonl")  # one row per invocation
    report_md = property(lambda self: self.root / "report.md")
    report_txt = property(lambda self: self.root / "report.txt")
    scores = property(lambda self: self.root / "scores.jsonl")
    references = property(lambda self: self.root / "references.jsonl")  # scored external checkpoints
    summary = property(lambda self: self.root / "summary.json")
    ablation = property(lambda self: self.root / "ablation.json")  # an ablation run's table
    sweep = property(lambda self: self.root / "sweep.json")  # a generator-size sweep's table
    points = property(lambda self: self.root / "points")  # a sweep's runs, one per point
    plots = property(lambda self: self.root / "plots")
    tensorboard = property(lambda self: self.root / "tensorboard")  # one event directory per objective
    lock = property(lambda self: self.root / ".lock")

    def pretrain_root(self, objective: str) -> Path:
        return self.root / "pretrain" / objective

    @staticmethod
    def of_pretrain(pretrain_dir: str | Path) -> Path:
        """The compare run a pre-training directory belongs to (`<run>/pretrain/<objective>/seed-<k>`)."""
        return Path(pretrain_dir).parent.parent.parent

    def pretrain(self, objective: str, seed: int = 0) -> PretrainLayout:
        return PretrainLayout(self.pretrain_root(objective) / f"seed-{int(seed)}")
