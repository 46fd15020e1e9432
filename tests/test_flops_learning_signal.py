"""The learning-signal table: the formula per objective, and the same counted on the real modules."""

import json
import math
import subprocess
import sys

import pytest

from electra_bench.choices import ALL_OBJECTIVES
from electra_bench.errors import BenchError
from electra_bench.flops.learning_signal import formula_signal, measured_signal, objective_signal

T, V, P = 40, 50, 0.15


@pytest.mark.parametrize("objective,every,v_way", [
    ("mlm", False, True), ("rtd", True, False), ("rtd-15", False, False), ("replace-mlm", False, True),
    ("alltokens-mlm", True, True)])
def test_measured_counts_the_positions_and_classes_the_module_uses(objective, every, v_way):
    m = measured_signal(objective, T, P, V)
    # masking picks round(15% of the real tokens), [CLS]/[SEP] counted but never picked: 6 of 40
    assert m["positions"] == (T if every else round(P * T))
    assert m["position_fraction"] == pytest.approx(m["positions"] / T)
    assert m["bits_per_position"] == pytest.approx(math.log2(V) if v_way else 1.0)
    f = formula_signal(objective, T, P, V)
    assert f["positions"] == (T if every else int(P * T)) and f["bits_per_position"] == m["bits_per_position"]


def test_objective_signal_rows_and_validation():
    rows = objective_signal(T, P, V, ("rtd", "rtd-15"))
    assert set(rows) == {"rtd", "rtd-15"} and rows["rtd"]["measured"]["bits"] == T
    assert set(objective_signal.__defaults__[-1]) == set(ALL_OBJECTIVES)
    with pytest.raises(BenchError):
        objective_signal(0, P, V)


def test_signal_command_json_has_every_objective():
    proc = subprocess.run([sys.executable, "-m", "electra_bench.cli", "signal", "--seq-len", "64", "--vocab-size",
                           "1000", "--json"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    s = json.loads(proc.stdout)
    assert s["mlm_positions"] == 9 and set(s["objectives"]) == set(ALL_OBJECTIVES)
    assert s["objectives"]["alltokens-mlm"]["measured"]["positions"] == 64
    # round(0.15 x 64) = 10 picks, but the official slot count int((0.15 + 0.005) x 64) = 9 caps them
    assert s["objectives"]["mlm"]["measured"]["positions"] == 9
