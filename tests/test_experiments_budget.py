"""Issue 49 (6): a compare's budget is resolved in one place and one pass (pretrain/schedule.resolve: parse,
share check, steps, note), carried by the spec as a `Budget`, and read, not recomputed, by each job's
`prepare` and the dry run; only a data vocabulary other than the preset's resolves it again, once."""

import dataclasses
from collections import Counter

import pytest

from electra_bench.experiments import work
from electra_bench.experiments.spec import CompareSpec
from electra_bench.pretrain import run as runner
from electra_bench.pretrain import schedule


def _spec(**kw):
    args = dict(preset=None, budget=None, quick=False, convention="measured", corpus=None, source=None, tasks=None,
                seeds=None, protocol=None, device="cpu")
    return CompareSpec.resolve(**{**args, **kw})


@pytest.fixture
def counted(monkeypatch):
    """FLOP counts (step_flops) by convention, and the share checks, run by schedule.py."""
    calls = Counter()
    step_flops, check_share = schedule.step_flops, schedule.check_share

    def counting_step_flops(p, objective, convention):
        calls[convention] += 1
        return step_flops(p, objective, convention)

    def counting_check_share(*a, **k):
        calls["share"] += 1
        return check_share(*a, **k)

    monkeypatch.setattr(schedule, "step_flops", counting_step_flops)
    monkeypatch.setattr(schedule, "check_share", counting_check_share)
    return calls


@pytest.mark.parametrize("budget", ["1.2e13", "150%"])
def test_the_budget_is_resolved_once_and_prepare_reads_it(monkeypatch, counted, budget):
    spec = _spec(budget=budget)
    b = spec.resolved
    # precheck's paper-count bound (no torch), then one exact pass: the reference and one step per objective
    assert counted["measured"] == 1 + len(spec.objectives)
    assert counted["share"] == 2
    p = spec.resolved_preset()
    assert b.share == budget.endswith("%") and b.text == budget
    assert b.flops == runner.resolve_budget(p, budget, "measured")
    assert b.reference_flops == runner.reference_flops(p, "measured")
    assert b.note == runner.budget_note(p, b.flops, "measured")
    counted.clear()

    monkeypatch.setattr(runner, "prepare_data", lambda preset, *a: ("data", preset))  # the preset's vocabulary
    data, p2, b2, plans = work.prepare(spec)
    assert counted == Counter() and b2 is b  # read, not recomputed
    assert plans == {o: runner.plan(p, o, b.flops, "measured") for o in spec.objectives}
    assert {o: plan.total_steps for o, plan in plans.items()} == b.steps


def test_the_budget_is_not_part_of_the_identity():
    spec = _spec()
    bare = dataclasses.replace(spec, resolved=None)
    assert spec.resolved is not None and "resolved" not in spec.to_dict()
    assert spec == bare and hash(spec) == hash(bare)
    assert spec.to_dict() == bare.to_dict() and spec.run_id() == bare.run_id()


def test_the_datas_vocabulary_resolves_it_again_once_on_the_datas_preset(monkeypatch, counted):
    spec = _spec(budget="150%")
    counted.clear()
    monkeypatch.setattr(runner, "prepare_data", lambda preset, *a: ("data", runner.with_vocab(preset, 500)))
    _, p, b, plans = work.prepare(spec)
    assert counted["measured"] == 1 + len(spec.objectives) and counted["share"] == 1
    assert p.model.encoder.vocab_size == 500 and b.preset == p and b is not spec.resolved
    assert b.flops == runner.resolve_budget(p, "150%", "measured")
    assert plans == {o: runner.plan(p, o, b.flops, "measured") for o in spec.objectives}
