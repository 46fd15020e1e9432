import pytest

from electra_bench.errors import BenchError
from electra_bench.flops.budget import make_plan, parse_budget
from electra_bench.pretrain.optim import lr_at

FRACS = (1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0)


@pytest.mark.parametrize("text,expected", [("1e15", 1e15), ("2.5e13", 2.5e13), (" 300 ", 300.0), ("25%", 250.0)])
def test_parse_budget(text, expected):
    assert parse_budget(text, reference_flops=1000.0) == expected


@pytest.mark.parametrize("text", ["abc", "1e15x", "-5", "0", "--1", "1e", "", "nan", "25 %%"])
def test_malformed_or_non_positive_budget_is_one_clear_error(text):
    with pytest.raises(BenchError, match="budget"):
        parse_budget(text, reference_flops=1000.0)


@pytest.mark.parametrize("budget,fps", [(1e15, 3.3e9), (1e10, 9.99e9), (7.77e12, 1.234e9), (1e9 * 16, 1e9)])
def test_plan_never_exceeds_budget_and_stops_within_one_step(budget, fps):
    plan = make_plan("rtd", "measured", budget, fps, FRACS)
    assert plan.planned_flops <= budget < plan.planned_flops + fps
    assert plan.checkpoints[1.0] == plan.total_steps
    for f, s in plan.checkpoints.items():
        assert abs(s - f * plan.total_steps) <= 0.5 + 1e-9 or s == 1


def test_budget_below_one_step_names_the_numbers():
    with pytest.raises(BenchError, match=r"smaller than one training step of mlm \(2e\+09 FLOPs"):
        make_plan("mlm", "measured", 1e9, 2e9, FRACS)


def test_checkpoints_at_the_papers_fractions():
    plan = make_plan("mlm", "paper", 160e9, 1e9, FRACS)
    assert plan.checkpoints == {1 / 16: 10, 1 / 8: 20, 1 / 4: 40, 1 / 2: 80, 1.0: 160}
    assert plan.flops_at(10) == 10e9


def test_lr_warms_up_then_decays_linearly_with_budget_fraction():
    total, peak = 1000, 1e-3
    lrs = [lr_at(s, total, peak, 0.1) for s in range(total)]
    assert lrs[0] == pytest.approx(peak * 1 / 100)
    assert max(lrs) == pytest.approx(peak * (1 - 99 / 1000))
    assert lrs[99] > lrs[200] > lrs[900] > lrs[-1] > 0
    # keyed to the fraction: a 4x longer budget has the same lr at the same fraction
    assert lr_at(500, 1000, peak, 0.1) == pytest.approx(lr_at(2000, 4000, peak, 0.1))
