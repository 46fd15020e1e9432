"""The orchestration around the core, fast, on a micro preset: a compare run counts every score, a
rerun resumes and skips, a deleted score is recomputed identically, checkpoints load back, and the
untrained point is exactly both objectives' initial encoder (by weights)."""

import json
import shutil

import pytest
import torch

from electra_bench import objectives, presets, run_config
from electra_bench.score.scoring import recipe_for, score_checkpoint
from electra_bench.experiments.compare import CompareSpec, run_compare
from electra_bench.flops import step_flops
from electra_bench.store.layout import RunLayout
from electra_bench.model import Encoder, EncoderConfig
from electra_bench.special_tokens import DEFAULT
from electra_bench.pretrain import checkpoint
from electra_bench.pretrain.trainer import initial_model

MICRO = (("batch_size", 8), ("seq_len", 32), ("vocab_size", 300))
TASK = "rt-polarity"


def _micro_spec(corpus, steps=8) -> CompareSpec:
    p = presets.resolve("tiny", presets.Overrides(**dict(MICRO)))
    budget = steps * max(step_flops(p.for_objective(o), o).flops_per_step for o in ("mlm", "rtd"))
    return CompareSpec(preset="tiny", budget=f"{budget:.6g}", corpus=str(corpus), tasks=(TASK,), seeds=1,
                       protocol="probe", pretrain_seeds=1, probe_pool=120, probe_examples=80, max_eval_examples=80,
                       threads=1, overrides=MICRO, jobs=1)


@pytest.fixture(scope="module")
def micro_run(tmp_path_factory, word_corpus):
    root = tmp_path_factory.mktemp("compare")
    spec = _micro_spec(word_corpus)
    summary, _ = run_compare(spec, root / "results", None, quiet=True)
    return spec, root / "results" / spec.run_id(), summary


def _score_rows(run):
    return [json.loads(line) for line in RunLayout(run).scores.read_text().splitlines()]


def test_every_point_is_scored_once(micro_run):
    spec, run, summary = micro_run
    rows = _score_rows(run)
    points = {(r["objective"], r["fraction"]) for r in rows}
    # the untrained encoder plus tiny's three checkpoints per objective
    assert points == {("init", 0.0)} | {(o, f) for o in ("mlm", "rtd") for f in (0.25, 0.5, 1.0)}
    metrics = {r["metric"] for r in rows}
    assert len(rows) == len(points) * len(metrics)  # one task, one eval seed, one pre-training seed
    assert summary["schema_version"] == 4 and summary["timings"]["pretrain_s"] > 0
    assert not RunLayout(run).lock.exists() and not list(run.rglob(".lock"))  # released and removed


def test_a_rerun_skips_and_a_missing_score_is_recomputed_identically(micro_run):
    spec, run, _ = micro_run
    layout = RunLayout(run)
    before = layout.scores.read_text()
    done = layout.pretrain("mlm", 0).done
    done_mtime = done.stat().st_mtime_ns
    provenance = layout.provenance.read_text()
    first = json.loads(layout.summary.read_text())
    run_compare(spec, run.parent, None, quiet=True)
    assert layout.scores.read_text() == before  # nothing rescored
    assert done.stat().st_mtime_ns == done_mtime  # nothing retrained
    # the rerun keeps the run's history: provenance of the first invocation, work summed over both
    assert layout.provenance.read_text() == provenance
    history = [json.loads(line) for line in layout.history.read_text().splitlines()]
    assert len(history) == 2 and history[0]["new_scores"] > 0 == history[1]["new_scores"]
    second = json.loads(layout.summary.read_text())
    assert second["invocations"] == 2 and second["timings"]["pretrain_s"] >= first["timings"]["pretrain_s"] > 0
    assert layout.report_md.read_text().startswith("|") or "|" in layout.report_md.read_text()
    assert "MLM" in layout.report_txt.read_text()

    rows = _score_rows(run)
    dropped = [r for r in rows if r["objective"] == "rtd" and r["fraction"] == 0.5]
    kept = [r for r in rows if r not in dropped]
    layout.scores.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in kept))
    run_compare(spec, run.parent, None, quiet=True)
    again = _score_rows(run)
    assert len(again) == len(rows)
    assert sorted(again[len(kept):], key=lambda r: r["metric"]) == sorted(dropped, key=lambda r: r["metric"])


def test_the_untrained_point_is_both_objectives_initial_encoder(synthetic):
    p = presets.resolve("tiny", presets.Overrides(**dict(MICRO)))
    for seed in (0, 3):
        untrained = objectives.initial_encoder(p.model.encoder, seed).state_dict()
        for objective in ("mlm", "rtd"):
            model, _ = initial_model(objective, p.for_objective(objective), synthetic(16, 32, 300), True, DEFAULT, seed)
            kept = model.backbone().state_dict()
            assert kept.keys() == untrained.keys()
            assert all(torch.equal(kept[k], untrained[k]) for k in kept), (objective, seed)
    other = objectives.initial_encoder(p.model.encoder, 1).state_dict()
    assert not all(torch.equal(other[k], untrained[k]) for k in other)  # the check can tell seeds apart


def test_checkpoint_round_trip_and_scoring_a_moved_run(micro_run, tmp_path):
    _, run, _ = micro_run
    ckpt = RunLayout(run).pretrain("mlm", 0).checkpoint(1.0)
    encoder, meta = checkpoint.load_encoder(ckpt)
    assert meta["objective"] == "mlm" and meta["fraction"] == 1.0 and meta["seq_len"] == 32
    checkpoint.save_encoder(tmp_path / "copy", encoder, {k: v for k, v in meta.items() if k != "encoder"})
    again, meta2 = checkpoint.load_encoder(tmp_path / "copy")
    assert again.cfg == encoder.cfg and meta2 == meta
    assert all(torch.equal(a, b) for a, b in zip(again.state_dict().values(), encoder.state_dict().values()))

    # a pre-training directory moved elsewhere still finds its tokenizer (relative to the checkpoint)
    moved = tmp_path / "moved"
    shutil.copytree(RunLayout(run).pretrain("mlm", 0).root, moved)
    result = score_checkpoint(str(moved / "checkpoints" / "frac-1.0000"), None, [TASK], 1, "probe", "cpu")
    assert result["objective"] == "mlm" and result["train_flops"] == meta["train_flops"]
    assert {r["task"] for r in result["results"]} == {TASK} and all(r["n_seeds"] == 1 for r in result["results"])


def test_recipe_for_takes_the_checkpoints_preset_values():
    r = recipe_for({"finetune_lr": 1e-4, "layerwise_lr_decay": 0.9, "seq_len": 32}, "finetune")
    assert (r.lr, r.layerwise_lr_decay, r.max_len, r.protocol) == (1e-4, 0.9, 32, "finetune")
    r = recipe_for({}, "probe")  # an old checkpoint without them: the paper's defaults, length 128
    assert (r.lr, r.layerwise_lr_decay, r.max_len) == (run_config.FINETUNE_LR, run_config.LAYERWISE_LR_DECAY, 128)


def test_encoder_config_survives_the_checkpoint_json(tmp_path):
    cfg = EncoderConfig(vocab_size=50, embedding_size=8, hidden_size=16, num_layers=1, num_heads=2, ffn_size=32,
                        max_positions=16)
    torch.manual_seed(0)
    checkpoint.save_encoder(tmp_path, Encoder(cfg), {"objective": "rtd"})
    assert checkpoint.load_encoder(tmp_path)[0].cfg == cfg


def _suite_with_pairs(root, corpus) -> str:
    """A suite directory of one ordinary task (ebs-2's rt-polarity) and one minimal-pair task made from the
    corpus's own words (good: a corpus-like sentence; bad: its words reversed)."""
    import gzip

    from electra_bench.data.suite import suite_dir

    d = root / "suite-with-pairs"
    (d / "rt-polarity").mkdir(parents=True)
    (d / "pairs-order").mkdir()
    shutil.copy(corpus, d / "corpus.txt")
    for split in ("train", "dev"):
        shutil.copy(suite_dir("ebs-2") / "rt-polarity" / f"{split}.tsv.gz", d / "rt-polarity" / f"{split}.tsv.gz")
    lines = [s.strip() for s in corpus.read_text().splitlines() if s.strip()][:60]
    rows = ["sentence_good\tsentence_bad\tparadigm"] + [
        f"{s}\t{' '.join(reversed(s[:-1].split()))}.\torder:forward" for s in lines]
    with gzip.open(d / "pairs-order" / "dev.tsv.gz", "wt", encoding="utf-8") as f:
        f.write("\n".join(rows) + "\n")
    tasks = [{"name": "rt-polarity", "text_fields": ["sentence"], "labels": ["0", "1"], "regression": False,
              "metrics": ["accuracy"], "primary": "accuracy", "kind": "sentiment"},
             {"name": "pairs-order", "text_fields": ["sentence_good", "sentence_bad"], "labels": None,
              "regression": False, "metrics": ["accuracy"], "primary": "accuracy", "kind": "acceptability",
              "minimal_pairs": True}]
    (d / "suite.json").write_text(json.dumps({"name": "pairs-test", "version": 1, "corpus": "corpus.txt",
                                              "tasks": tasks}))
    return str(d)


def test_a_run_read_two_ways_keeps_its_first_readings_scores(tmp_path, word_corpus):
    """probe first (every checkpoint), then the same run extended by the zero-shot reading (the untrained
    encoder and the final checkpoints): the probe's scores stay as they were, each reading scores only
    the tasks it reads, and the summary gives a verdict per reading with the probe's as the headline."""
    import dataclasses

    source = _suite_with_pairs(tmp_path, word_corpus)
    spec = dataclasses.replace(_micro_spec(word_corpus), source=source, tasks=None)
    run_compare(spec, tmp_path / "results", "two-ways", quiet=True)
    layout = RunLayout(tmp_path / "results" / "two-ways")
    before = layout.scores.read_text()
    assert {json.loads(r)["task"] for r in before.splitlines()} == {"rt-polarity"}
    both = dataclasses.replace(spec, readings=("zeroshot",))
    summary, rendered = run_compare(both, tmp_path / "results", "two-ways", quiet=True)
    after = layout.scores.read_text()
    assert after.startswith(before)
    zs = [json.loads(r) for r in after[len(before):].splitlines()]
    assert {r["protocol"] for r in zs} == {"zeroshot"} and {r["task"] for r in zs} == {"pairs-order"}
    assert {(r["objective"], r["fraction"]) for r in zs} == {("init", 0.0), ("mlm", 1.0), ("rtd", 1.0)}
    metrics = {(r["objective"], r["metric"]) for r in zs}
    assert ("rtd", "generator_accuracy") in metrics and ("init", "discriminator_accuracy") in metrics
    assert all(0 <= r["value"] <= 100 for r in zs) and any(r["value"] > 1 for r in zs)  # every score's 0-100 scale
    stats = summary["protocols"]["zeroshot"]["statistics"]
    assert "not used" not in (stats.get("note") or "")  # the stored per-pair outcomes reproduce the rows
    assert summary["main_protocol"] == "probe" and set(summary["readings"]["per_reading"]) == {"probe", "zeroshot"}
    assert "Reading zeroshot: RTD - MLM" in rendered and "Zero-shot heads" in rendered
    assert json.loads(layout.config.read_text())["readings"] == ["zeroshot"]
