"""From scores.jsonl to summary.json, built and cached. The schema is in docs/results.md.

Each part of the summary has its own module, by what it states: points.py (what a checkpoint scores, the
curves), headline.py ("reaches X% of ..."), confidence.py (the statistics), crossover.py, verdict.py
(ranked or not, and why), invariants.py (what every summary keeps). Here: the learning block, each
protocol's (reading's) block and the run's summary, and load_or_build, which rebuilds a stored summary of
another schema or one that breaks an invariant. The lines the report and the plots print from a summary
are present/summary_text.py.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Mapping

import pandas as pd

from ..choices import FLOP_CONVENTIONS, PROTOCOLS, listing_order
from ..errors import BenchError, at
from ..score import glue_score
from ..score.readings import reads_spec
from ..store import atomic_io
from ..store.runs import RunDir
from . import confidence, crossover, learning, readings, references
from .headline import reach
from .invariants import invariant_violations
from .points import LABELS, TRAINED, Scorer, curve, final_point, point, reference_points
from .records import SUMMARY_SCHEMA, Summary
from .verdict import noise_verdict

SCHEMA_VERSION = SUMMARY_SCHEMA


def learning_report(run: RunDir) -> dict:
    """Per objective: every pre-training seed's diagnostics (trajectory, final values, flags) and the
    mean of the final values over seeds."""
    out: dict[str, Any] = {
        "thresholds": {"min_mlm_gain_nats": learning.MIN_MLM_GAIN_NATS, "min_disc_auc": learning.MIN_DISC_AUC,
                       "min_disc_gap_nats": learning.MIN_DISC_GAP_NATS,
                       "max_token_cosine": learning.MAX_TOKEN_COSINE},
    }
    for o in TRAINED:
        runs = []
        for seed in run.pretrain_seeds(o):
            report = learning.run_report(o, atomic_io.read_jsonl(run.layout.pretrain(o, seed).log))
            runs.append({"seed": seed, **report})
        if runs:
            out[o] = {
                "runs": runs,
                "final_mean": {k: learning.mean_final(runs, k) for k in learning.DIAGNOSTICS},
                "learned": all(r["learned"] is not False for r in runs),
            }
    return out


def _param_count(params: Any, objective: str) -> int | None:
    value = params
    if isinstance(params, Mapping):
        value = params.get(objective)
        if value is None and objective == "init":  # the untrained encoder is the same architecture
            value = params.get("mlm", params.get("rtd"))
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value)


def _models(config: Mapping[str, Any], extra: Mapping[str, Any]) -> dict:
    """Row labels and parameter counts, from the optional keys `preset` (a name, or a dict with "name")
    and `params` (one int, or {objective: int}) of the run config, else of provenance.json's `extra`."""
    preset = config.get("preset", extra.get("preset"))
    if isinstance(preset, Mapping):
        preset = preset.get("name")
    params = config.get("params", extra.get("params"))
    out = {}
    for obj in ("mlm", "rtd", "init"):
        label = LABELS[obj] if obj == "init" or not preset else f"{LABELS[obj]} {preset}"
        out[obj] = {"label": label, "params": _param_count(params, obj)}
    return out


def _pick_convention(df: pd.DataFrame, convention: str | None, path) -> str:
    present = sorted(set(df.loc[df["objective"] != "init", "convention"])) or sorted(set(df["convention"]))
    if convention is None:
        if len(present) > 1:
            raise BenchError(f"{at(path)}: scores in both FLOP conventions ({', '.join(present)}): choose one")
        return present[0] if present else "measured"
    if convention not in FLOP_CONVENTIONS:
        raise BenchError(f"unknown FLOP convention '{convention}': choose one of {', '.join(FLOP_CONVENTIONS)}")
    if present and convention not in present:
        raise BenchError(f"{at(path)}: no scores in the '{convention}' FLOP convention (it has {', '.join(present)})")
    return convention


def build_summary(run: RunDir, task_specs: Mapping[str, Any] | None = None, convention: str | None = None, *,
                  score_convention: str = "electra", suite_name: str | None = None) -> dict:
    """The run's summary (see docs/results.md). `convention` is the FLOP convention of train_flops
    ("measured" or "paper"; None: the only one present); `score_convention` the GLUE convention used
    when the suite is GLUE."""
    path = run.layout.scores
    df = run.scores()
    if df.empty:
        raise BenchError(f"{at(path)}: no scores to summarise")
    convention = _pick_convention(df, convention, path)
    df = df[(df["objective"] == "init") | (df["convention"] == convention)]
    key = ["objective", "pretrain_seed", "fraction", "task", "seed", "metric", "protocol"]
    df = df.drop_duplicates(subset=key, keep="last")
    config, extra = _read_or_empty(lambda: run.config), _read_or_empty(lambda: run.provenance() or {})
    extra = extra.get("extra") if isinstance(extra.get("extra"), Mapping) else {}
    present = [p for p in PROTOCOLS if p in set(df["protocol"])]
    # the suite's tasks that some reading of this run scores (a probe run of ebs-3 leaves its minimal pairs out)
    suite_tasks = [t for t in task_specs if any(reads_spec(p, task_specs[t]) for p in present)] if task_specs \
        else sorted(df["task"].unique())
    suite_name = suite_name or _suite_name(suite_tasks, score_convention, config, extra)
    scorer = Scorer(suite_tasks, task_specs, score_convention)
    learning_block = _learning_block(run)
    ref_rows = references.stored(run)
    protocols = {protocol: _protocol_block(run, df[df["protocol"] == protocol],
                                           _reading_scorer(scorer, protocol, df, task_specs, score_convention),
                                           convention, learning_block, ref_rows[ref_rows["protocol"] == protocol],
                                           config.get("until_resolved"))
                 for protocol in present}
    # the headline's reading: the one the run named first; else (runs made before a run named several) the
    # paper's fine-tuning when scored
    main = config.get("protocol") if config.get("protocol") in protocols else \
        "finetune" if "finetune" in protocols else present[0]
    return Summary(
        run_id=run.run_id,
        created_utc=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        flop_convention=convention,
        score_convention=score_convention,
        score_scale="0-100 (accuracy/F1 x100, MCC and correlations x100)",
        suite={"name": suite_name, "tasks": suite_tasks, "aggregate": scorer.kind, "description": scorer.description,
               **({"kinds": scorer.kinds} if scorer.kind == "suite-kind-mean" else {})},
        models=_models(config, extra),
        config=config,
        learning=learning_block,
        main_protocol=main,
        protocols=protocols,
        headline=protocols[main]["headline"],
        verdict=protocols[main]["verdict"],
        crossover=protocols[main]["crossover"],
        readings=readings.compare_readings(protocols, main, df[df["protocol"] == "zeroshot"]
                                           if "zeroshot" in protocols else None,
                                           scorer.kinds if scorer.kind == "suite-kind-mean" else None),
    ).to_json()


def _reading_scorer(scorer: Scorer, protocol: str, df: pd.DataFrame, task_specs, score_convention: str) -> Scorer:
    """The suite's scorer over the tasks `protocol` reads (score/readings.py): a suite may hold minimal-pair
    tasks, which only the zero-shot reading scores, beside tasks every other protocol scores."""
    if task_specs:
        tasks = [t for t in scorer.tasks if reads_spec(protocol, task_specs.get(t))]
    else:
        tasks = sorted(df.loc[df["protocol"] == protocol, "task"].unique())
    if tasks == scorer.tasks:
        return scorer
    return Scorer(tasks, {t: task_specs[t] for t in tasks} if task_specs else None, score_convention)


def _read_or_empty(read) -> dict:
    try:
        return read()
    except BenchError:
        return {}


def _suite_name(tasks: list[str], score_convention: str, config: Mapping, extra: Mapping) -> str:
    if glue_score.is_glue(tasks):
        return "GLUE" if glue_score.covers(tasks, score_convention) else f"GLUE subset ({', '.join(tasks)})"
    return next((v for v in (config.get("suite"), extra.get("suite")) if isinstance(v, str) and v), "task suite")


def _learning_block(run: RunDir) -> dict:
    """learning_report, keeping a committed summary's record for runs without their pre-training logs."""
    block = learning_report(run)
    stored = _read_or_empty(lambda: run.summary() or {})
    for o in TRAINED:
        if o not in block and isinstance((stored.get("learning") or {}).get(o), Mapping):
            block[o] = stored["learning"][o]
    return block


def _protocol_block(run: RunDir, prows: pd.DataFrame, scorer: Scorer, convention: str, learning_block: dict,
                    ref_rows: pd.DataFrame, sequential_design: Mapping[str, Any] | None = None) -> dict:
    """One protocol's points, curves, headline, statistics, verdict and crossover (docs/results.md);
    `sequential_design`: the run's --until-resolved design (config.json's `until_resolved`)."""
    points = [point(objective, fraction, rows, scorer)
              for (objective, fraction), rows in prows.groupby(["objective", "fraction"], sort=False)]
    points.sort(key=lambda p: (listing_order(p["objective"]), p["fraction"]))
    stats = confidence.compute(run, prows, scorer, points, sequential_design=sequential_design)
    block = {
        "tasks": sorted(prows["task"].unique()),
        "points": points,
        "curves": {o: [{"objective": p["objective"], "fraction": p["fraction"], "train_flops": p["train_flops"],
                        "score": p["score"]["value"], "min": p["score"]["min"], "max": p["score"]["max"]}
                       for p in curve(points, o)] for o in TRAINED},
        "final": {o: (fp["fraction"] if (fp := final_point(points, o)) else None) for o in TRAINED},
        "headline": {"rtd_reaches_mlm": reach(points, "rtd", "mlm", convention),
                     "mlm_reaches_rtd": reach(points, "mlm", "rtd", convention)},
        "verdict": noise_verdict(points, stats, learning_block).to_json(),
        "crossover": crossover.crossover_from_ci(stats, convention),
        "statistics": stats,
    }
    refs = reference_points(ref_rows, scorer)
    if refs:  # left out when there are none: summaries made before references existed stay as they were
        block["references"] = refs
    return block


def update_summary(run: RunDir, task_specs: Mapping[str, Any] | None = None, convention: str | None = None,
                   **kwargs) -> dict:
    """Build the summary and write it to the (writable) run; returns it."""
    summary = build_summary(run, task_specs, convention, **kwargs)
    run.write_summary(summary)
    return summary


def load_or_build(run: RunDir, task_specs: Mapping[str, Any] | None = None, convention: str | None = None,
                  **kwargs) -> dict:
    """summary.json when it exists with this schema version (and, if given, this FLOP convention) and
    keeps every invariant (`invariant_violations`); otherwise built from scores.jsonl, so a summary
    written by an older version that contradicts itself is not shown as it is."""
    stored = run.summary()
    if stored is not None:
        try:
            Summary.from_json(stored)
        except BenchError:  # another schema, or fields missing or unknown: built again from the scores
            stored = None
    if (stored is not None and stored.get("schema_version") == SCHEMA_VERSION
            and (convention is None or stored.get("flop_convention") == convention) and task_specs is None
            and not invariant_violations(stored)):
        return stored
    return build_summary(run, task_specs, convention, **kwargs)
