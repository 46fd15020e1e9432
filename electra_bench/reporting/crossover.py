"""The crossover: the pre-training budget from which one objective's score curve stays ahead of another's
(or of the untrained encoder's score) by more than the noise band, with its spread over seeds. Built from
the points of a summary's protocol block; the rule is in docs/results.md ("Crossover").

Difference curve. For "RTD over MLM", d(F) = score_RTD(F) - score_MLM(F) on a common FLOP grid: every
checkpoint of either objective (and the untrained encoder at 0 FLOPs, which starts both curves), inside
the FLOP range both curves cover. The two objectives' checkpoints at the same budget fraction are one
grid point at the geometric mean of their FLOPs (their plans differ by a few steps, so their FLOPs by up
to a few percent); elsewhere a curve is interpolated between its own checkpoints the way the headline
interpolates (linearly in log FLOPs, linearly in FLOPs on the segment from 0), which is also how the
score plot draws it on its log axis. Against the untrained encoder the reference is a constant.

Band. At each grid point the threshold is the larger of the two curves' bands (score.range: over
pre-training seeds, else evaluation seeds; interpolated like the scores), the verdict's noise rule. The
margin is d - threshold; the objective is ahead beyond the band where the margin is > 0.

Crossover. The smallest F from which the margin stays > 0 up to the end of the common range: found on the
grid and placed exactly inside the segment where the margin turns positive (each of d - band_1 and
d - band_2 is a straight line there; the crossover is where the later of the two crosses 0). The margin
is concave on every segment, so positive at two neighbouring grid points means positive between them:
from the crossover on the objective is ahead everywhere, not only at the checkpoints. Touching the band
edge (margin exactly 0) is not being ahead. When the margin turns positive between the untrained encoder
(0 FLOPs) and the first checkpoint, or is positive at the first grid point with no untrained point scored,
the crossover is "at most" the first checkpoint: nothing was measured in between, and on a log axis 0
FLOPs is minus infinity, so a place inside that segment would be the interpolation's choice.

Uncertainty. The same rule on each seed's curves (the seeds the band is over, paired by seed number
between the two objectives: pre-training seed k of RTD and of MLM start from the same untrained encoder),
with the same thresholds; the range spans the mean curves' crossover and every seed's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from .text_formats import fmt_flops

# summary key -> (objective, reference); "init" is the untrained encoder
PAIRS = {
    "rtd_over_mlm": ("rtd", "mlm"),
    "rtd_over_untrained": ("rtd", "init"),
    "mlm_over_rtd": ("mlm", "rtd"),
    "mlm_over_untrained": ("mlm", "init"),
}
REPORTED = ("rtd_over_mlm", "rtd_over_untrained")  # the two lines reports print; all four are in the JSON
STATUSES = ("crossed", "crossed_back", "touched", "never", "no_band", "incomplete")
NAMES = {"mlm": "MLM", "rtd": "RTD", "init": "the untrained encoder"}
SEED_WORDS = {"pretrain_seeds": "pre-training seed", "eval_seeds": "evaluation seed"}
# two objectives' checkpoints at the same budget fraction are one grid point when their FLOPs are at most
# this far apart (the plans round the budget to whole steps of different sizes: 0.85% at 1/4 of --quick)
SAME_CHECKPOINT_RATIO = 1.05
BAND_RULE = ("ahead where score - reference score > the larger of their two bands (score.range: over "
             "pre-training seeds, else evaluation seeds), the verdict's noise rule; crossover: the smallest "
             "FLOPs from which that holds at every later checkpoint up to the end of the common range, "
             "interpolated linearly in log FLOPs (in FLOPs from 0); range: the same rule per seed, same bands")


@dataclass
class _Knot:
    """One scored point of a curve (the untrained encoder or a checkpoint): its FLOPs, budget fraction,
    score, band and per-seed scores (the seeds the band is over)."""
    flops: float
    fraction: float
    value: float
    band: float | None
    band_kind: str
    seeds: dict[str, float]


def _knot(p: Mapping[str, Any]) -> _Knot:
    s = p["score"]
    seeds = s.get("per_pretrain_seed") if s.get("band") == "pretrain_seeds" else s.get("per_seed")
    return _Knot(float(p["train_flops"]), float(p["fraction"]), float(s["value"]), s.get("range"),
                 s.get("band", "eval_seeds"), dict(seeds or {}))


def _curve(points: Sequence[Mapping[str, Any]], objective: str) -> list[_Knot]:
    """The untrained point (if scored), then the objective's scored checkpoints by FLOPs."""
    init = [p for p in points if p["objective"] == "init" and p["score"]["value"] is not None][:1]
    if objective == "init":
        return [_knot(p) for p in init]
    own = sorted((p for p in points if p["objective"] == objective and p["score"]["value"] is not None),
                 key=lambda p: (p["train_flops"], p["fraction"]))
    return [_knot(p) for p in init + own] if own else []


def _same_checkpoint(a: _Knot, b: _Knot) -> bool:
    if a.fraction != b.fraction:
        return False
    if a.flops == b.flops:
        return True
    lo, hi = sorted((a.flops, b.flops))
    return lo > 0 and hi / lo <= SAME_CHECKPOINT_RATIO


def _positions(a: list[_Knot], b: list[_Knot]) -> tuple[list[float], list[float]]:
    """Each knot's place on the common grid: its own FLOPs, or the geometric mean with the other curve's
    knot at the same budget fraction when the two are neighbours and within SAME_CHECKPOINT_RATIO."""
    curves = (a, b)
    pos = ([k.flops for k in a], [k.flops for k in b])
    entries = sorted((k.flops, side, i) for side, knots in enumerate(curves) for i, k in enumerate(knots))
    i = 0
    while i + 1 < len(entries):
        (f1, s1, i1), (f2, s2, i2) = entries[i], entries[i + 1]
        if s1 != s2 and _same_checkpoint(curves[s1][i1], curves[s2][i2]):
            pos[s1][i1] = pos[s2][i2] = math.sqrt(f1 * f2)
            i += 2
        else:
            i += 1
    return pos


def _weight(x: float, lo: float, hi: float) -> float:
    """Where x sits between lo and hi: in log FLOPs, or in FLOPs on a segment from 0."""
    if lo <= 0:
        return (x - lo) / (hi - lo)
    return (math.log(x) - math.log(lo)) / (math.log(hi) - math.log(lo))


def _mix(ya: float | None, yb: float | None, t: float) -> float | None:
    return None if ya is None or yb is None else ya + t * (yb - ya)


@dataclass
class _At:
    """A curve evaluated at one grid point (`knot`: its own checkpoint there, else None)."""
    value: float
    band: float | None
    seeds: dict[str, float]
    knot: _Knot | None


def _evaluate(knots: list[_Knot], pos: list[float], x: float, constant: bool) -> _At | None:
    """The curve at grid position x: its knot there, else interpolated between the two around x; None
    outside its range. The untrained encoder as a reference is the same at every x."""
    if constant:
        k = knots[0]
        return _At(k.value, k.band, k.seeds, k if x == pos[0] else None)
    for k, p in zip(knots, pos):
        if p == x:
            return _At(k.value, k.band, k.seeds, k)
    for (ka, pa), (kb, pb) in zip(zip(knots, pos), zip(knots[1:], pos[1:])):
        if pa < x < pb:
            t = _weight(x, pa, pb)
            seeds = {s: _mix(ka.seeds[s], kb.seeds[s], t) for s in ka.seeds if s in kb.seeds}
            return _At(ka.value + t * (kb.value - ka.value), _mix(ka.band, kb.band, t), seeds, None)
    return None


def _threshold(bands: Sequence[float | None]) -> float | None:
    """The verdict's rule: the larger band of the two (bands a point lacks are left out)."""
    present = [b for b in bands if b is not None]
    return max(present) if present else None


def _pieces(d: float | None, bands: Sequence[float | None]) -> list[float | None]:
    """d - band for each of the two curves' bands at this grid point (None where a curve has no band
    there, or no difference): the margin is the smallest of those present."""
    return [None if d is None or b is None else d - b for b in bands]


def _margin(pieces: Sequence[float | None]) -> float | None:
    present = [p for p in pieces if p is not None]
    return min(present) if present else None


def _to_flops(u: float, lo: float) -> float:
    return u if lo <= 0 else math.exp(u)


def _coord(x: float, lo: float) -> float:
    return x if lo <= 0 else math.log(x)


def _paired(pa: Sequence[float | None], pb: Sequence[float | None]) -> list[tuple[float, float]]:
    """The straight pieces of the margin known at both ends of a segment."""
    return [(ya, yb) for ya, yb in zip(pa, pb) if ya is not None and yb is not None]


def _rise(xa: float, xb: float, pa, pb) -> float:
    """Where the margin turns positive on [xa, xb] (<= 0 at xa, > 0 at xb): the latest zero of its
    straight pieces. xb when the segment starts at the untrained encoder (0 FLOPs: a log axis puts it at
    minus infinity, so any place between it and the first checkpoint is the interpolation's choice, not a
    measurement) or when no piece is known at both ends (nothing to place it by)."""
    pairs = _paired(pa, pb)
    if xa <= 0 or not pairs:
        return xb
    ua, ub = _coord(xa, xa), _coord(xb, xa)
    roots = [ua if ya > 0 else ua + (ub - ua) * (-ya) / (yb - ya) if yb > 0 else ub for ya, yb in pairs]
    return _to_flops(max(roots), xa)


def _fall(xa: float, xb: float, pa, pb) -> float:
    """Where the margin stops being positive on [xa, xb] (> 0 at xa, <= 0 at xb): the earliest zero."""
    pairs = _paired(pa, pb)
    if not pairs:
        return xb
    ua, ub = _coord(xa, xa), _coord(xb, xa)
    roots = [ub if yb > 0 else ua + (ub - ua) * ya / (ya - yb) if ya > 0 else ua for ya, yb in pairs]
    return _to_flops(min(roots), xa)


def _ahead_intervals(grid: list[float], diffs: list[float | None],
                     bands: list[tuple[float | None, float | None]]) -> list[list[float | None]]:
    """[start, end] FLOPs of every stretch where the margin is > 0 (end None: it holds to the end of
    the grid). A stretch that starts at the first grid point starts there."""
    pieces = [_pieces(d, b) for d, b in zip(diffs, bands)]
    margins = [_margin(p) for p in pieces]
    ahead = [m is not None and m > 0 for m in margins]
    out: list[list[float | None]] = []
    j, n = 0, len(grid)
    while j < n:
        if not ahead[j]:
            j += 1
            continue
        start = grid[0] if j == 0 else _rise(grid[j - 1], grid[j], pieces[j - 1], pieces[j])
        k = j
        while k + 1 < n and ahead[k + 1]:
            k += 1
        end = None if k == n - 1 else _fall(grid[k], grid[k + 1], pieces[k], pieces[k + 1])
        out.append([start, end])
        j = k + 1
    return out


def _holding(intervals: list[list[float | None]]) -> float | None:
    """The start of the stretch that lasts to the end, if the last one does."""
    return intervals[-1][0] if intervals and intervals[-1][1] is None else None


def crossover(points: Sequence[Mapping[str, Any]], objective: str, reference: str, convention: str) -> dict:
    """Where `objective`'s curve passes `reference`'s (an objective, or "init") beyond the band and stays
    ahead; the fields are documented in docs/results.md ("Crossover")."""
    own, ref = _curve(points, objective), _curve(points, reference)
    out: dict[str, Any] = {
        "objective": objective, "reference": reference, "status": "incomplete", "reached": False,
        "stays_ahead": False, "flops": None, "bound": None, "flops_low": None, "flops_high": None,
        "per_seed_flops": {}, "seeds": None, "first_flops": None, "ahead_intervals": [], "max_flops": None,
        "difference_curve": [], "band_rule": BAND_RULE,
    }
    constant = reference == "init"
    if objective == "init" or not own or not ref or (constant and len(own) < 2):
        out["text"] = _text(out, convention)
        return out
    pos_own, pos_ref = _positions(own, ref)
    grid = sorted({x for x in pos_own + ([] if constant else pos_ref)})
    rows = []
    for x in grid:
        a = _evaluate(own, pos_own, x, False)
        b = _evaluate(ref, pos_ref, x, constant)
        if a is not None and b is not None:
            rows.append((x, a, b))
    if not rows:
        out["text"] = _text(out, convention)
        return out
    grid = [x for x, _, _ in rows]
    diffs = [a.value - b.value for _, a, b in rows]
    bands = [(a.band, b.band) for _, a, b in rows]
    out["max_flops"] = grid[-1]
    for (x, a, b), d, bb in zip(rows, diffs, bands):
        thr = _threshold(bb)
        out["difference_curve"].append({
            "flops": x, "score": a.value, "reference_score": b.value, "difference": d, "threshold": thr,
            "margin": None if thr is None else d - thr,
            "fraction": a.knot.fraction if a.knot else None,
            "reference_fraction": b.knot.fraction if b.knot else None,
        })
    margins = [c["margin"] for c in out["difference_curve"]]
    intervals = _ahead_intervals(grid, diffs, bands)
    out["ahead_intervals"] = intervals
    if all(m is None for m in margins):
        out["status"] = "no_band"
    elif intervals:
        out.update(reached=True, first_flops=intervals[0][0])
        holds = _holding(intervals)
        if holds is None:
            out["status"] = "crossed_back"
        else:
            first_checkpoint = next((x for x in grid if x > 0), None)
            out.update(status="crossed", stays_ahead=True, flops=holds,
                       bound="at_most" if holds == first_checkpoint else "interpolated")
    else:
        # at 0 FLOPs both sides are the untrained encoder: a margin of 0 there touches nothing
        trained = [m for x, m in zip(grid, margins) if m is not None and x > 0]
        scale = max(1.0, max(abs(d) for d in diffs))
        out["status"] = "touched" if trained and max(trained) >= -1e-9 * scale else "never"
    _per_seed(out, rows, grid, bands)
    out["text"] = _text(out, convention)
    return out


def _per_seed(out: dict, rows: list, grid: list[float], bands: list) -> None:
    """per_seed_flops and the range, from the seeds the band is over, every one scored at every grid
    point of both curves (paired by seed number)."""
    kinds = {k.band_kind for _, a, b in rows for k in (a.knot, b.knot) if k is not None}
    if len(kinds) != 1 or out["status"] in ("no_band", "incomplete"):
        return
    out["seeds"] = kinds.pop()
    common = set.intersection(*[set(a.seeds) & set(b.seeds) for _, a, b in rows])
    for s in sorted(common, key=lambda s: (len(s), s)):
        diffs = [a.seeds[s] - b.seeds[s] for _, a, b in rows]
        out["per_seed_flops"][s] = _holding(_ahead_intervals(grid, diffs, bands))
    if out["flops"] is not None and out["per_seed_flops"]:
        found = [f for f in out["per_seed_flops"].values() if f is not None]
        out["flops_low"] = min([out["flops"]] + found)
        out["flops_high"] = max([out["flops"]] + found) if len(found) == len(out["per_seed_flops"]) else None


def _range_text(c: Mapping[str, Any]) -> str:
    """The range over seeds, when there is one (every seed at the same place is none)."""
    if c["flops_low"] is None or c["flops_low"] == c["flops_high"]:
        return ""
    word = SEED_WORDS.get(c["seeds"], "seed")
    if c["flops_high"] is None:
        return f" [{fmt_flops(c['flops_low'])}, not within the run for every {word}]"
    return f" [{fmt_flops(c['flops_low'])}, {fmt_flops(c['flops_high'])} over {word}s]"


def _text(c: Mapping[str, Any], convention: str) -> str:
    """The sentence reports print (docs/results.md lists the forms)."""
    who, ref = NAMES[c["objective"]], NAMES[c["reference"]]
    status = c["status"]
    upto = f"up to {fmt_flops(c['max_flops'])} FLOPs"
    if status == "incomplete":
        return f"Crossover: {who} vs {ref}: no common FLOP range with scores"
    if status == "no_band":
        return f"Crossover: {who} vs {ref} not judged: no band (needs >= 2 seeds per point)"
    if status == "crossed":
        if c["bound"] == "at_most":
            return (f"Crossover: {who} is ahead of {ref} beyond the band by the first checkpoint (at most "
                    f"{fmt_flops(c['flops'])} FLOPs{_range_text(c)}, {convention} convention) and stays ahead ({upto})")
        return (f"Crossover: {who} passes {ref} beyond the band at {fmt_flops(c['flops'])} FLOPs{_range_text(c)} "
                f"({convention} convention) and stays ahead ({upto})")
    if status == "crossed_back":
        start, end = c["ahead_intervals"][-1]
        return (f"Crossover: {who} passed {ref} beyond the band at {fmt_flops(start)} FLOPs but fell back by "
                f"{fmt_flops(end)}: not reached within the run ({upto})")
    if status == "touched":
        return f"Crossover: {who} reaches the edge of {ref}'s band but not beyond: not reached within the run ({upto})"
    return f"Crossover: {who} does not pass {ref} beyond the band: not reached within the run ({upto})"


def crossovers(points: Sequence[Mapping[str, Any]], convention: str) -> dict:
    """Every pair of PAIRS, keyed as there."""
    return {key: crossover(points, o, r, convention) for key, (o, r) in PAIRS.items()}


def lines(block: Mapping[str, Any]) -> list[str]:
    """The crossover sentences of a protocol block that reports print (none for a pair with nothing to
    compare, e.g. an objective without scores: the verdict already says so)."""
    cross = block.get("crossover") or {}
    return [cross[k]["text"] for k in REPORTED if k in cross and cross[k]["status"] != "incomplete"]


def _close(a: float, b: float, rel: float = 1e-9) -> bool:
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))


def violations(block: Mapping[str, Any]) -> list[str]:
    """How a protocol block's crossover contradicts itself or the block's verdict (docs/results.md,
    "Invariants")."""
    bad: list[str] = []

    def need(cond: bool, what: str) -> None:
        if not cond:
            bad.append(what)

    cross = block.get("crossover")
    if not isinstance(cross, Mapping) or set(cross) != set(PAIRS):
        return [f"crossover needs exactly the keys {', '.join(PAIRS)}"]
    verdict = block["verdict"]
    for key, c in cross.items():
        where = f"crossover.{key}"
        need((c["objective"], c["reference"]) == PAIRS[key], f"{where}: objective/reference are not {PAIRS[key]}")
        status = c["status"]
        need(status in STATUSES, f"{where}: unknown status {status!r}")
        need(c["stays_ahead"] == (c["flops"] is not None) == (status == "crossed"),
             f"{where}: stays_ahead, flops and status disagree")
        need(c["reached"] == (c["first_flops"] is not None) == (status in ("crossed", "crossed_back")),
             f"{where}: reached, first_flops and status disagree")
        need((c["bound"] is not None) == (c["flops"] is not None) and c["bound"] in (None, "interpolated", "at_most"),
             f"{where}: bound {c['bound']!r} with flops {c['flops']!r}")
        curve = c["difference_curve"]
        flops = [p["flops"] for p in curve]
        need(flops == sorted(flops) and len(set(flops)) == len(flops),
             f"{where}: difference_curve FLOPs do not increase")
        need(c["max_flops"] == (flops[-1] if flops else None), f"{where}: max_flops is not the last grid point")
        for p in curve:
            need(_close(p["difference"], p["score"] - p["reference_score"]),
                 f"{where}: difference != score - reference")
            need((p["margin"] is None) == (p["threshold"] is None)
                 and (p["margin"] is None or _close(p["margin"], p["difference"] - p["threshold"])),
                 f"{where}: margin != difference - threshold")
        if status == "crossed":
            need(curve[-1]["margin"] is not None and curve[-1]["margin"] > 0,
                 f"{where}: crossed but not ahead at the end")
            need(0 <= c["first_flops"] <= c["flops"] <= c["max_flops"] * (1 + 1e-12),
                 f"{where}: crossover outside the run")
            if c["flops_low"] is not None:
                high = c["flops_high"] if c["flops_high"] is not None else math.inf
                need(c["flops_low"] <= c["flops"] <= high, f"{where}: flops outside [flops_low, flops_high]")
        else:
            need(c["flops_low"] is None and c["flops_high"] is None, f"{where}: a range without a crossover")
            if curve and status != "no_band":
                m = curve[-1]["margin"]
                need(m is None or m <= 0, f"{where}: ahead at the end but status {status!r}")
        if status in ("touched", "never"):
            need(all(p["margin"] is None or p["margin"] <= 0 for p in curve),
                 f"{where}: ahead somewhere but {status!r}")
        need(c["text"].startswith("Crossover: "), f"{where}: text")
        if status in ("touched", "never", "crossed_back"):
            need("not reached within the run" in c["text"], f"{where}: text does not say 'not reached within the run'")
    # the same judgement as the verdict where both look at the same two points
    for o in ("mlm", "rtd"):
        b = verdict.get("beats_untrained", {}).get(o)
        c = cross[f"{o}_over_untrained"]
        if b is not None and c["status"] != "incomplete":
            need(c["stays_ahead"] == (b["beats"] is True),
                 f"crossover.{o}_over_untrained: stays_ahead {c['stays_ahead']} but beats_untrained {b['beats']}")
    last = (cross["rtd_over_mlm"]["difference_curve"] or [None])[-1]
    final = block["final"]
    if (last is not None and verdict.get("exceeds_band") is not None and last["fraction"] is not None
            and last["fraction"] == final.get("rtd") and last["reference_fraction"] == final.get("mlm")):
        diff = verdict["difference"]
        need(cross["rtd_over_mlm"]["stays_ahead"] == (verdict["exceeds_band"] and diff > 0),
             "crossover.rtd_over_mlm.stays_ahead disagrees with the verdict at the final checkpoints")
        need(cross["mlm_over_rtd"]["stays_ahead"] == (verdict["exceeds_band"] and diff < 0),
             "crossover.mlm_over_rtd.stays_ahead disagrees with the verdict at the final checkpoints")
    return bad
