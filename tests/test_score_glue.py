"""Both GLUE conventions on hand-made metric dicts, and against published tables."""

import warnings
from types import SimpleNamespace

import pytest

from electra_bench.errors import BenchError
from electra_bench.score import glue_score

FULL = {
    "cola": {"mcc": 50.0},
    "sst2": {"accuracy": 90.0},
    "mrpc": {"accuracy": 80.0, "f1": 86.0},
    "stsb": {"pearson": 84.0, "spearman": 82.0},
    "qqp": {"accuracy": 88.0, "f1": 70.0},
    "mnli": {"accuracy_matched": 78.0, "accuracy_mismatched": 79.0},
    "qnli": {"accuracy": 87.0},
    "rte": {"accuracy": 60.0},
    "wnli": {"accuracy": 56.0},
}


def test_electra_convention_by_hand():
    # CoLA MCC, SST acc, MRPC acc, STS Spearman, QQP acc, MNLI-m acc, QNLI acc, RTE acc; no WNLI
    expected = (50 + 90 + 80 + 82 + 88 + 78 + 87 + 60) / 8  # = 76.875
    assert glue_score.score(FULL, "electra") == pytest.approx(expected)
    assert expected == pytest.approx(76.875)


def test_glue_leaderboard_convention_by_hand():
    # per task: CoLA 50, SST 90, MRPC (80+86)/2=83, STS (84+82)/2=83, QQP (88+70)/2=79,
    # MNLI (78+79)/2=78.5, QNLI 87, RTE 60, WNLI 56 -> mean of 9
    expected = (50 + 90 + 83 + 83 + 79 + 78.5 + 87 + 60 + 56) / 9
    assert glue_score.score(FULL, "glue") == pytest.approx(expected)
    detail = glue_score.score_detail(FULL, "glue")
    assert detail.per_task["mnli"] == pytest.approx(78.5)
    assert len(detail.per_task) == 9 and not detail.partial


# GLUE paper (Wang et al. 2019), Table 4 rows: Avg, CoLA, SST-2, MRPC acc/F1, QQP acc/F1, STS-B r/rho,
# MNLI m/mm, QNLI, RTE, WNLI. The leaderboard rule must reproduce the printed Avg.
GLUE_TABLE_4 = [
    (66.4, 35.0, 90.2, (69.0, 80.8), (85.7, 65.6), (64.0, 60.2), (72.9, 73.4), 71.7, 50.1, 65.1),
    (64.0, 14.5, 88.5, (73.4, 81.4), (83.3, 59.4), (67.2, 64.1), (64.5, 64.8), 75.4, 53.5, 65.1),
    (70.0, 33.6, 90.4, (78.0, 84.4), (84.3, 63.1), (74.2, 72.3), (74.1, 74.5), 79.8, 58.9, 65.1),
    (58.9, 0.0, 80.0, (73.4, 81.5), (79.1, 51.4), (61.2, 58.7), (56.0, 56.4), 72.1, 54.1, 65.1),
    (66.2, 7.7, 83.1, (76.6, 83.0), (82.9, 59.8), (79.3, 79.2), (71.4, 71.3), 78.6, 59.2, 65.1),
]


def _glue_row(row):
    _, cola, sst, mrpc, qqp, sts, mnli, qnli, rte, wnli = row
    return {
        "cola": {"mcc": cola}, "sst2": {"accuracy": sst},
        "mrpc": {"accuracy": mrpc[0], "f1": mrpc[1]}, "qqp": {"accuracy": qqp[0], "f1": qqp[1]},
        "stsb": {"pearson": sts[0], "spearman": sts[1]},
        "mnli": {"accuracy_matched": mnli[0], "accuracy_mismatched": mnli[1]},
        "qnli": {"accuracy": qnli}, "rte": {"accuracy": rte}, "wnli": {"accuracy": wnli},
    }


@pytest.mark.parametrize("row", GLUE_TABLE_4)
def test_glue_convention_reproduces_glue_paper_table_4(row):
    assert glue_score.score(_glue_row(row), "glue") == pytest.approx(row[0], abs=0.05)


def test_alternative_rules_miss_the_printed_averages():
    # MNLI-m and MNLI-mm as two of ten entries, or WNLI left out, do not reproduce Table 4
    ten_off, no_wnli_off = [], []
    for row in GLUE_TABLE_4:
        d = glue_score.score_detail(_glue_row(row), "glue").per_task
        ten = (sum(d.values()) - d["mnli"] + row[6][0] + row[6][1]) / 10
        no_wnli = (sum(d.values()) - d["wnli"]) / 8
        ten_off.append(abs(ten - row[0]) > 0.05)
        no_wnli_off.append(abs(no_wnli - row[0]) > 0.05)
    assert sum(ten_off) >= 3 and sum(no_wnli_off) >= 3


# ELECTRA paper, Table 2 (GLUE dev, large models): CoLA SST MRPC STS QQP MNLI QNLI RTE, Avg.
ELECTRA_TABLE_2 = [
    ((60.6, 93.2, 88.0, 90.0, 91.3, 86.6, 92.3, 70.4), 84.0),
    ((69.3, 96.0, 90.6, 92.1, 92.4, 90.5, 94.5, 86.8), 89.0),
    ((69.1, 96.9, 90.8, 92.6, 92.4, 90.9, 95.0, 88.0), 89.5),
]


@pytest.mark.parametrize("scores, avg", ELECTRA_TABLE_2)
def test_electra_convention_reproduces_electra_table_2(scores, avg):
    names = [("cola", "mcc"), ("sst2", "accuracy"), ("mrpc", "accuracy"), ("stsb", "spearman"), ("qqp", "accuracy"),
             ("mnli", "accuracy_matched"), ("qnli", "accuracy"), ("rte", "accuracy")]
    tm = {t: {m: v} for (t, m), v in zip(names, scores)}
    assert glue_score.score(tm, "electra") == pytest.approx(avg, abs=0.05)


def test_missing_tasks_are_named():
    partial = {k: v for k, v in FULL.items() if k not in ("cola", "qqp")}
    with pytest.raises(BenchError, match="cola.*qqp"):
        glue_score.score(partial, "electra")
    no_f1 = {**FULL, "mrpc": {"accuracy": 80.0}}
    with pytest.raises(BenchError, match="mrpc:f1"):
        glue_score.score(no_f1, "glue")
    # wnli is only needed by the leaderboard rule
    no_wnli = {k: v for k, v in FULL.items() if k != "wnli"}
    glue_score.score(no_wnli, "electra")
    with pytest.raises(BenchError, match="wnli"):
        glue_score.score(no_wnli, "glue")


def test_partial_averages_what_is_there_and_says_so():
    partial = {"sst2": {"accuracy": 90.0}, "rte": {"accuracy": 60.0}}
    with pytest.warns(UserWarning, match="partial GLUE score"):
        value = glue_score.score(partial, "electra", partial=True)
    assert value == pytest.approx(75.0)
    detail = glue_score.score_detail(partial, "electra", partial=True)
    assert detail.partial and "cola" in detail.missing


def test_unknown_convention():
    with pytest.raises(BenchError, match="unknown GLUE convention"):
        glue_score.score(FULL, "superglue")


def test_suite_score_uses_primary_metrics():
    tm = {"a": {"accuracy": 70.0, "f1": 10.0}, "b": {"spearman": 40.0, "pearson": 0.0}}
    specs = {"a": {"primary_metric": "accuracy"}, "b": SimpleNamespace(primary_metric="spearman")}
    assert glue_score.suite_score(tm, specs) == pytest.approx(55.0)
    # a spec listing metrics: the first is primary
    assert glue_score.suite_score(tm, {"a": {"metrics": ["f1", "accuracy"]}}) == pytest.approx(10.0)
    with pytest.raises(BenchError, match="c"):
        glue_score.suite_score(tm, {**specs, "c": {"primary_metric": "accuracy"}})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert glue_score.suite_score(tm, {**specs, "c": None}, partial=True) == pytest.approx(55.0)


def test_task_spec_objects_like_the_loaders():
    # data.tasks.TaskSpec names its primary metric `primary`; MNLI's "accuracy" is stored per split
    spec = SimpleNamespace(name="mnli", metrics=("accuracy",), primary="accuracy")
    avail = {"accuracy_matched": 70.0, "accuracy_mismatched": 72.0}
    assert glue_score.primary_metric("mnli", spec, avail) == "accuracy_matched"
    other = SimpleNamespace(metrics=("spearman", "pearson"), primary="spearman")
    assert glue_score.primary_metric("vader-rating", other, {"pearson": 1.0, "spearman": 2.0}) == "spearman"
