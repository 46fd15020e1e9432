"""scripts/finetune_control.py (issue 23's protocol control): its table of full fine-tuning scores per
encoder, with both seed bands, beside the run's own score at the same checkpoint, and the two rankings."""

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "finetune_control.py"


@pytest.fixture(scope="module")
def control():
    spec = importlib.util.spec_from_file_location("finetune_control", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _row(objective, pretrain_seed, seed, value, fraction=1.0, task="word-scramble", metric="mcc"):
    return {"objective": objective, "pretrain_seed": pretrain_seed, "seed": seed, "fraction": fraction,
            "task": task, "metric": metric, "value": value}


TASK = SimpleNamespace(name="word-scramble", primary="mcc", metrics=["mcc"])


def test_means_and_bands_per_pretraining_seed(control):
    rows = [_row("rtd", 0, 0, 60.0), _row("rtd", 0, 1, 64.0), _row("rtd", 1, 0, 50.0), _row("rtd", 1, 1, 51.0),
            _row("init", 0, 0, 1.0), _row("init", 0, 1, -1.0), _row("init", 1, 0, 0.0), _row("init", 1, 1, 0.0)]
    table = {t["objective"]: t for t in control.summarise(rows, TASK)}
    rtd = table["rtd"]
    assert rtd["metric"] == "mcc"
    assert rtd["per_pretrain_seed"] == [62.0, 50.5]
    assert rtd["mean"] == pytest.approx(56.25, abs=0.01)
    assert rtd["pretrain_band"] == pytest.approx(5.75, abs=0.01)   # half the range of 62.0 and 50.5
    assert rtd["eval_band"] == pytest.approx(2.0)                   # the widest: seed 0's 60..64
    assert table["init"]["mean"] == 0.0 and table["init"]["run_protocol_mean"] is None


def test_run_score_taken_at_the_final_checkpoint_and_task(control):
    rows = [_row("mlm", 0, 0, 40.0), _row("rtd", 0, 0, 45.0)]
    run_rows = [_row("mlm", 0, 0, 10.0, fraction=0.5), _row("mlm", 0, 0, 30.0), _row("mlm", 0, 1, 32.0),
                _row("mlm", 0, 0, 99.0, task="rt-polarity", metric="accuracy"),
                _row("rtd", 0, 0, 20.0), _row("rtd", 0, 0, 77.0, fraction=0.25)]
    table = control.summarise(rows, TASK, run_rows)
    by = {t["objective"]: t for t in table}
    assert by["mlm"]["run_protocol_mean"] == 31.0
    assert by["rtd"]["run_protocol_mean"] == 20.0
    # fine-tuning puts RTD first, the run's protocol MLM: the control must show the disagreement
    assert control.ranking(table, "mean") == "rtd > mlm"
    assert control.ranking(table, "run_protocol_mean") == "mlm > rtd"
