"""The ELECTRA paper's published points, as data, for the plots' optional overlay.

Source: Clark, Luong, Le, Manning. "ELECTRA: Pre-training Text Encoders as Discriminators Rather Than
Generators", ICLR 2020 (arXiv:2003.10555).
- Table 1 ("Comparison of small models on the GLUE dev set"): train FLOPs, params, GLUE dev score.
- Table 2 ("Comparison of large models on the GLUE dev set"): train FLOPs, params, per-task dev scores
  and average.
Every number below is copied from those tables as printed; nothing is derived or estimated. The paper
counts FLOPs analytically ("paper" convention) and its GLUE score is the `electra` convention of
glue_score.py (CoLA MCC, STS Spearman, accuracy elsewhere, no WNLI; median of 10 fine-tuning runs).
Note ELECTRA-Small 25% trained is printed as 3.6e17 FLOPs (scoring 77.7).
"""

from __future__ import annotations

from dataclasses import dataclass, field

SOURCE = "Clark et al. 2020, ELECTRA (ICLR 2020, arXiv:2003.10555)"
OVERLAY_LABEL = "paper (GLUE dev, paper FLOP convention)"


@dataclass(frozen=True)
class PaperPoint:
    model: str
    objective: str  # "rtd", "mlm" or "other" (ELMo/GPT/XLNet/RoBERTa: different objectives)
    train_flops: float
    params: int
    glue: float  # GLUE dev score, ELECTRA convention
    fraction: float | None = None  # of the model's full schedule, where the paper says
    table: str = "Table 1"
    tasks: dict[str, float] = field(default_factory=dict)  # per-task dev scores, where printed


# Table 1 -- small models (and base-size ELECTRA/BERT), GLUE dev.
TABLE_1 = (
    PaperPoint("ELMo", "other", 3.3e18, 96_000_000, 71.2),
    PaperPoint("GPT", "other", 4.0e19, 117_000_000, 78.8),
    PaperPoint("BERT-Small", "mlm", 1.4e18, 14_000_000, 75.1, 1.0),
    PaperPoint("BERT-Base", "mlm", 6.4e19, 110_000_000, 82.2, 1.0),
    PaperPoint("ELECTRA-Small", "rtd", 1.4e18, 14_000_000, 79.9, 1.0),
    PaperPoint("ELECTRA-Small 50% trained", "rtd", 7.1e17, 14_000_000, 79.0, 0.5),
    PaperPoint("ELECTRA-Small 25% trained", "rtd", 3.6e17, 14_000_000, 77.7, 0.25),
    PaperPoint("ELECTRA-Small 12.5% trained", "rtd", 1.8e17, 14_000_000, 76.0, 0.125),
    PaperPoint("ELECTRA-Small 6.25% trained", "rtd", 8.9e16, 14_000_000, 74.1, 0.0625),
    PaperPoint("ELECTRA-Base", "rtd", 6.4e19, 110_000_000, 85.1, 1.0),
)

_T2_TASKS = ("cola", "sst2", "mrpc", "stsb", "qqp", "mnli", "qnli", "rte")


def _t2(model: str, objective: str, flops: float, params: int, scores: tuple[float, ...], avg: float) -> PaperPoint:
    return PaperPoint(model, objective, flops, params, avg, None, "Table 2", dict(zip(_T2_TASKS, scores)))


# Table 2 -- large models, GLUE dev (BERT row: dev results the paper takes from Clark et al. 2019).
TABLE_2 = (
    _t2("BERT-Large", "mlm", 1.9e20, 335_000_000, (60.6, 93.2, 88.0, 90.0, 91.3, 86.6, 92.3, 70.4), 84.0),
    _t2("RoBERTa-100K", "other", 6.4e20, 356_000_000, (66.1, 95.6, 91.4, 92.2, 92.0, 89.3, 94.0, 82.7), 87.9),
    _t2("RoBERTa-500K", "other", 3.2e21, 356_000_000, (68.0, 96.4, 90.9, 92.1, 92.2, 90.2, 94.7, 86.6), 88.9),
    _t2("XLNet", "other", 3.9e21, 360_000_000, (69.0, 97.0, 90.8, 92.2, 92.3, 90.8, 94.9, 85.9), 89.1),
    _t2("BERT-Large (ours)", "mlm", 7.1e20, 335_000_000, (67.0, 95.9, 89.1, 91.2, 91.5, 89.6, 93.5, 79.5), 87.2),
    _t2("ELECTRA-400K", "rtd", 7.1e20, 335_000_000, (69.3, 96.0, 90.6, 92.1, 92.4, 90.5, 94.5, 86.8), 89.0),
    _t2("ELECTRA-1.75M", "rtd", 3.1e21, 335_000_000, (69.1, 96.9, 90.8, 92.6, 92.4, 90.9, 95.0, 88.0), 89.5),
)

ALL = TABLE_1 + TABLE_2


def points(*, objectives: tuple[str, ...] = ("mlm", "rtd", "other"), tables: tuple[str, ...] = ("Table 1",)) -> list[PaperPoint]:
    return [p for p in ALL if p.objective in objectives and p.table in tables]


def small_curves() -> dict[str, list[PaperPoint]]:
    """The paper's ELECTRA-Small compute curve (6.25% .. 100%) and BERT-Small's single point, by FLOPs."""
    rtd = sorted((p for p in TABLE_1 if p.model.startswith("ELECTRA-Small")), key=lambda p: p.train_flops)
    mlm = [p for p in TABLE_1 if p.model == "BERT-Small"]
    return {"rtd": rtd, "mlm": mlm}
