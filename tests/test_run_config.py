"""The config tree (run_config.py): knobs set by name, sections checked where they are built, and the
schema: every committed run's stored config reads back as the config its command resolves to now."""

import dataclasses
import json
from pathlib import Path

import pytest

from electra_bench import presets
from electra_bench.errors import BenchError
from electra_bench.experiments.references import spec_of_run
from electra_bench.pretrain.run_dir import comparable_identity
from electra_bench.run_config import KNOBS, SECTIONS, RunConfig

from config_dicts import schema1

RESULTS = Path(__file__).resolve().parent.parent / "results"
STORED_RUNS = sorted(RESULTS.glob("*/pretrain/*/seed-*/run.json"))


def test_every_field_is_a_knob_with_one_place():
    for section, cls in SECTIONS.items():
        for f in dataclasses.fields(cls):
            assert KNOBS[f.name][:2] == (section, f.name)
    assert KNOBS["vocab_size"] == ("model", "encoder", "vocab_size")


def test_with_knobs_rebuilds_and_checks_the_section():
    p = presets.get("tiny")
    q = p.with_knobs(lr=1e-3, num_layers=3, steps=7, mask_prob=0.2, checkpoint_fractions=[0.5, 1.0])
    assert (q.optim.lr, q.model.encoder.num_layers, q.schedule.steps, q.objective.mask_prob) == (
        1e-3, 3, {"mlm": 7, "rtd": 7}, 0.2)
    assert q.schedule.checkpoint_fractions == (0.5, 1.0)  # JSON's list back to the field's tuple
    assert (q.model.encoder.hidden_size, q.schedule.seq_len) == (p.model.encoder.hidden_size, p.schedule.seq_len)
    for bad, says in ((dict(lr=0.0), "lr must be positive"), (dict(mask_prob=1.5), "mask_prob"),
                      (dict(batch_size=0), "batch_size"), (dict(dropout=1.0), "dropout"),
                      (dict(learning_rate=1e-3), "unknown knob"), (dict(embedding_sharing="both"), "both")):
        with pytest.raises(BenchError, match=says):
            p.with_knobs(**bad)


def test_objective_values_apply_per_objective_and_the_command_line_wins():
    p = presets.get("tiny")
    assert (p.for_objective("mlm").objective.mask_prob, p.for_objective("rtd").objective.mask_prob) == (0.25, 0.15)
    q = presets.resolve("tiny", presets.Overrides(mask_prob=0.2))
    assert q.for_objective("mlm").objective.mask_prob == q.for_objective("rtd").objective.mask_prob == 0.2
    with pytest.raises(BenchError, match="unknown preset knob"):
        presets.Overrides(mask_probability=0.2)


@pytest.mark.parametrize("name", presets.names())
def test_to_dict_round_trips_in_both_schemas(name):
    p = presets.get(name)
    d = json.loads(json.dumps(p.to_dict()))
    assert d["schema"] == 2 and RunConfig.from_dict(d) == p
    assert RunConfig.from_dict(schema1(p)) == p  # schema 1: run.json before the tree
    with pytest.raises(BenchError, match="schema 3"):
        RunConfig.from_dict({**d, "schema": 3})


def test_committed_runs_are_found():
    assert len(STORED_RUNS) >= 18  # results/*/pretrain/<objective>/seed-<n>/run.json, as committed


@pytest.mark.parametrize("run_file", STORED_RUNS, ids=lambda p: str(p.relative_to(RESULTS)))
def test_committed_runs_keep_their_identity(run_file):
    """What resumes a pre-training run: its run.json (schema 1, or the config tree for runs made since) must
    read as the config that run's config.json resolves to now, so a rerun continues it instead of refusing it. The
    run's compare identity (config.json, hashed into its id) must read back unchanged too."""
    stored = json.loads(run_file.read_text())
    run_root = run_file.parents[3]
    config = json.loads((run_root / "config.json").read_text())
    spec = spec_of_run(config)
    assert spec.to_dict() == config
    assert spec.protocols[1:] == tuple(config.get("readings", ()))  # a run read several ways: report --reference
    objective = run_file.parent.parent.name
    # the tokenizer's, as data preparation sets it: schema 1 (flat) or the config tree (results/multiseed-ebs3)
    tree = stored["preset"].get("model", stored["preset"])
    vocab = tree["encoder"]["vocab_size"]
    now = spec.resolved_preset().with_knobs(vocab_size=vocab).for_objective(objective)
    assert RunConfig.from_dict(stored["preset"]) == now
    assert comparable_identity(stored) == comparable_identity({**stored, "preset": now.to_dict()})
    changed = now.with_knobs(lr=now.optim.lr * 2)
    assert comparable_identity(stored) != comparable_identity({**stored, "preset": changed.to_dict()})
