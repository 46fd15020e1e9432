"""The invariants every summary keeps (verdict kind vs separated/better, reached vs percent, bands >= 0,
curves vs points, crossover vs its CIs), listed in docs/results.md and tested in
tests/test_summarise_invariants.py; load_or_build rebuilds a stored summary that breaks one."""

from __future__ import annotations

from typing import Any, Mapping

from .headline import fmt_percent
from .points import LABELS, TRAINED, curve, final_point
from .records import VERDICT_KINDS

HEADLINE_BOUNDS = ("exact", "interpolated", "at_most", "untrained", "not_reached")


def _close(a: float, b: float, rel: float = 1e-9) -> bool:
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))


def invariant_violations(summary: Mapping[str, Any]) -> list[str]:
    """Every way this summary contradicts itself (empty: none). The invariants are listed in
    docs/results.md ("Invariants"); load_or_build rebuilds a stored summary that breaks one."""
    bad: list[str] = []

    def need(cond: bool, what: str) -> None:
        if not cond:
            bad.append(what)

    try:
        protocols = summary["protocols"]
        main = summary["main_protocol"]
        need(main in protocols, f"main_protocol {main!r} has no block")
        if main in protocols:
            need(summary.get("headline") == protocols[main]["headline"], "top-level headline is not the main protocol's")
            need(summary.get("verdict") == protocols[main]["verdict"], "top-level verdict is not the main protocol's")
            need(summary.get("crossover") == protocols[main].get("crossover"),
                 "top-level crossover is not the main protocol's")
        learning_block = summary.get("learning") or {}
        for o in TRAINED:
            if o in learning_block:
                runs = learning_block[o]["runs"]
                need(learning_block[o]["learned"] == all(r["learned"] is not False for r in runs),
                     f"learning.{o}.learned disagrees with its runs")
        for name, block in protocols.items():
            bad += [f"{name}: {v}" for v in _block_violations(block, learning_block)]
    except (KeyError, TypeError, AttributeError) as e:  # a field is missing or has the wrong type
        bad.append(f"malformed summary ({type(e).__name__}: {e})")
    return bad


def _block_violations(block: Mapping[str, Any], learning_block: Mapping[str, Any]) -> list[str]:
    bad: list[str] = []

    def need(cond: bool, what: str) -> None:
        if not cond:
            bad.append(what)

    points = block["points"]
    for p in points:
        where = f"point {p['objective']}@{p['fraction']:g}"
        need(p["objective"] in ("init",) + TRAINED, f"{where}: unknown objective")
        if p["objective"] == "init":
            need(p["fraction"] == 0 and p["train_flops"] == 0, f"{where}: the untrained point is not at 0 FLOPs")
        else:
            need(p["fraction"] > 0 and p["train_flops"] >= 0, f"{where}: a checkpoint needs fraction > 0, FLOPs >= 0")
        sc = p["score"]
        need(sc["band"] in ("eval_seeds", "pretrain_seeds"), f"{where}: unknown band {sc['band']!r}")
        if sc["min"] is not None:
            need(sc["max"] is not None and sc["min"] <= sc["max"], f"{where}: score min > max")
        if sc["range"] is not None:
            need(sc["range"] >= 0 and _close(sc["range"], sc["max"] - sc["min"]), f"{where}: range != max - min")
        need(sc["std"] is None or sc["std"] >= 0, f"{where}: negative std")
        if sc["band"] == "pretrain_seeds" and sc["value"] is not None:
            need(sc["min"] <= sc["value"] <= sc["max"], f"{where}: value outside its pre-training-seed band")
        for task, t in p["tasks"].items():
            if t.get("min") is not None:
                need(t["min"] <= t["median"] <= t["max"], f"{where}: {task} median outside [min, max]")
                need(t["min"] - 1e-9 <= t["mean"] <= t["max"] + 1e-9, f"{where}: {task} mean outside [min, max]")
    for o in TRAINED:
        fp = final_point(points, o)
        need(block["final"].get(o) == (fp["fraction"] if fp else None), f"final.{o} is not its largest fraction")
        cv = block["curves"][o]
        expected = curve(points, o)
        need([(c["objective"], c["fraction"]) for c in cv] == [(q["objective"], q["fraction"]) for q in expected],
             f"curves.{o} is not init then its checkpoints by FLOPs")
        flops = [c["train_flops"] for c in cv]
        need(flops == sorted(flops), f"curves.{o} FLOPs decrease")
        need(all(c["score"] == q["score"]["value"] for c, q in zip(cv, expected)), f"curves.{o} scores differ from points")
    for key, h in block["headline"].items():
        if h is not None:
            bad += [f"headline.{key}: {v}" for v in _headline_violations(h, points)]
    bad += [f"verdict: {v}" for v in _verdict_violations(block["verdict"], points, learning_block)]
    bad += _crossover_violations(block)
    return bad


def _crossover_violations(block: Mapping[str, Any]) -> list[str]:
    """A crossover that holds is a checkpoint from which the CI of the difference is above 0 to the end."""
    bad = []
    stats = block.get("statistics") or {}
    for key, c in (block.get("crossover") or {}).items():
        if not isinstance(c, Mapping) or "status" not in c:
            continue
        if key == "rtd_over_mlm":
            los = sorted((d["fraction"], d["ci"][0]) for d in stats.get("differences", []))
        else:
            los = sorted((d["fraction"], d["ci"][0]) for d in stats.get("vs_untrained", [])
                         if d["objective"] == c["objective"])
        if c["status"] == "crossed":
            after = [lo for f, lo in los if f >= c["from_fraction"] - 1e-12]
            if not after or min(after) <= 0:
                bad.append(f"crossover.{key}: crossed, but a CI at or after it reaches 0")
        elif los and all(lo > 0 for _, lo in los):
            bad.append(f"crossover.{key}: every CI is above 0, yet status {c['status']!r}")
    return bad


def _headline_violations(h: Mapping[str, Any], points: list[dict]) -> list[str]:
    bad: list[str] = []

    def need(cond: bool, what: str) -> None:
        if not cond:
            bad.append(what)

    need(h["objective"] in TRAINED and h["reference"] in TRAINED and h["objective"] != h["reference"],
         "objective/reference are not MLM and RTD")
    ref = final_point(points, h["reference"])
    need(ref is not None and h["target_score"] == ref["score"]["value"], "target_score is not the reference's final score")
    need(ref is not None and h["reference_flops"] == ref["train_flops"], "reference_flops is not the reference's final FLOPs")
    bound = h["bound"]
    need(bound in HEADLINE_BOUNDS, f"unknown bound {bound!r}")
    need(h["reached"] == (h["flops"] is not None) == (bound != "not_reached"), "reached, flops and bound disagree")
    if not h["reached"]:
        need(h["percent"] is None and h["fraction_of_reference_compute"] is None, "a share without reaching")
        need("does not reach" in h["text"], "text does not say 'does not reach'")
    elif bound == "untrained":
        need(h["flops"] == 0, "bound 'untrained' with FLOPs != 0")
        need(h["percent"] is None and h["fraction_of_reference_compute"] is None, "bound 'untrained' with a share")
        need(h["text"].startswith("The untrained encoder already reaches"), "text does not say the untrained encoder reaches")
        init = next((p for p in points if p["objective"] == "init"), None)
        need(init is not None and init["score"]["value"] is not None and init["score"]["value"] >= h["target_score"],
             "bound 'untrained' but the untrained encoder is below the target")
    else:
        need(h["flops"] > 0, "reached with FLOPs <= 0 outside bound 'untrained'")
        own = final_point(points, h["objective"])
        need(own is not None and h["flops"] <= own["train_flops"] * (1 + 1e-9), "reached beyond its own final FLOPs")
        if h["reference_flops"] > 0:
            frac = h["fraction_of_reference_compute"]
            need(frac is not None and frac > 0 and _close(frac, h["flops"] / h["reference_flops"]),
                 "fraction_of_reference_compute != flops / reference_flops")
            need(h["percent"] is not None and h["percent"] > 0 and _close(h["percent"], 100 * frac),
                 "percent != 100 x fraction, or not > 0")
            need(fmt_percent(h["percent"]) in h["text"], "text does not carry the percent")
        else:
            need(h["percent"] is None, "a percent of 0 reference FLOPs")
        need(("at most" in h["text"]) == (bound == "at_most"), "'at most' in the text iff bound 'at_most'")
    return bad


def _verdict_violations(v: Mapping[str, Any], points: list[dict], learning_block: Mapping[str, Any]) -> list[str]:
    bad: list[str] = []

    def need(cond: bool, what: str) -> None:
        if not cond:
            bad.append(what)

    kind = v["kind"]
    need(kind in VERDICT_KINDS, f"unknown kind {kind!r}")
    need(isinstance(v["separated"], bool), "separated is not a bool")
    need(v["separated"] == (kind == "ranked"), f"separated={v['separated']} with kind {kind!r}")
    need((v["better"] is not None) == (kind == "ranked"), f"better={v['better']!r} with kind {kind!r}")
    need(v["better"] in (None,) + TRAINED, f"unknown better {v['better']!r}")
    need(isinstance(v["verdict"], str) and v["verdict"], "no verdict sentence")
    finals = {o: final_point(points, o) for o in TRAINED}
    usable = {o: p for o, p in finals.items() if p is not None and p["score"]["value"] is not None}
    diff, ci = v["difference"], v["ci"]
    need((diff is None) == (ci is None), "a difference without its CI, or a CI without one")
    if ci is not None:
        need(ci[0] <= ci[1], "CI lower bound above its upper bound")
        need(0 < v["p_value"] <= 1, "p-value outside (0, 1]")
    need(v["band"] is None or v["band"] >= 0, "negative band")
    for o, b in v["beats_untrained"].items():
        need(b["beats"] == (b["ci"][0] > 0), f"beats_untrained.{o}: beats != CI above 0")
    flagged = any(r.get("learned") is False for o in TRAINED for r in (learning_block.get(o) or {}).get("runs", []))
    need((kind == "not_learned") == bool(v["not_learned"]) == flagged, "not_learned kind, list and learning disagree")
    if kind == "incomplete":
        need(len(usable) < 2, "incomplete with both final scores")
    elif kind == "too_small":
        need(len(usable) == 2 and [b["beats"] for b in v["beats_untrained"].values()] == [False, False],
             "too_small while an objective beats (or was not compared with) the untrained encoder")
    elif kind == "no_noise":
        need(len(usable) == 2 and ci is None, "no_noise with an interval")
    elif kind == "ranked":
        need(ci is not None and (ci[0] > 0 or ci[1] < 0), "ranked while the CI includes 0")
        need(v["better"] == ("rtd" if diff > 0 else "mlm"), "better is not the sign of the difference")
        need(v["verdict"].startswith(LABELS[v["better"]] + " ahead"), "verdict sentence does not name the better one")
    elif kind == "not_resolved":
        need(ci is not None and ci[0] <= 0 <= ci[1], "not_resolved while the CI excludes 0")
    return bad
