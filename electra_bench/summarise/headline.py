"""The headline: how much of one objective's compute the other needs to reach its final score.

Headline. "RTD reaches MLM's final score with X% of its compute": walk RTD's curve (init, then its
checkpoints by FLOPs) to the first segment that reaches MLM's final (largest-fraction) score and
interpolate inside it -- linearly in FLOPs on the segment from init (0 FLOPs, where log is undefined),
linearly in log FLOPs between checkpoints. X = those FLOPs / MLM's final FLOPs. If RTD's first point
already reaches it and that point is a checkpoint, X is an upper bound ("at_most"); if it is the
untrained encoder (0 FLOPs), there is no share to report ("untrained", percent null: on the downstream
tasks MLM's pre-training has not improved on its starting point, whatever its held-out diagnostics say);
if no point reaches it, "not reached". The same with MLM and RTD swapped.
"""

from __future__ import annotations

import math

from ..units import fmt_flops
from .points import LABELS, curve, final_point


def fmt_percent(p: float) -> str:
    return f"{p:.3g}%" if p < 10 else f"{p:.0f}%"


def flops_to_reach(curve_points: list[tuple[float, float]], target: float) -> tuple[float | None, str]:
    """FLOPs at which a curve of (flops, score) first reaches `target`, and how that number was got:
    "exact" (a point hits it and nothing earlier could; 0 FLOPs when the first point is the untrained
    encoder, which reach reports as "untrained"), "interpolated", "at_most" (the first point is a
    checkpoint already above target), or "not_reached" (None)."""
    pts = sorted(curve_points, key=lambda p: p[0])
    if not pts:
        return None, "not_reached"
    f0, s0 = pts[0]
    if s0 >= target:
        return f0, ("exact" if f0 <= 0 else "at_most")
    for (fa, sa), (fb, sb) in zip(pts, pts[1:]):
        if sb >= target:
            t = (target - sa) / (sb - sa)
            if fa <= 0:
                f = fa + t * (fb - fa)
            else:
                f = math.exp(math.log(fa) + t * (math.log(fb) - math.log(fa)))
            return f, ("exact" if t >= 1.0 else "interpolated")
    return None, "not_reached"


def reach(points: list[dict], who: str, reference: str, convention: str) -> dict | None:
    ref_final = final_point(points, reference)
    own = curve(points, who)
    if ref_final is None or not any(p["objective"] == who for p in own) or ref_final["score"]["value"] is None:
        return None
    target = ref_final["score"]["value"]
    ref_flops = ref_final["train_flops"]
    pts = [(p["train_flops"], p["score"]["value"]) for p in own if p["score"]["value"] is not None]
    flops, bound = flops_to_reach(pts, target)
    W, R = LABELS[who], LABELS[reference]
    out = {
        "objective": who,
        "reference": reference,
        "target_score": target,
        "reference_flops": ref_flops,
        "reached": flops is not None,
        "flops": flops,
        "bound": bound,
        "fraction_of_reference_compute": None,
        "percent": None,
    }
    if flops is None:
        best = max(pts, key=lambda p: p[1]) if pts else (None, None)
        if best[1] is None:
            where = ""
        elif best[0] <= 0:  # the best of its curve is where it started
            where = f" (its best is the untrained encoder's {best[1]:.1f})"
        else:
            where = f" (best {best[1]:.1f} at {fmt_flops(best[0])} FLOPs)"
        out["text"] = f"{W} does not reach {R}'s final score ({target:.1f}) within its budget{where}"
        return out
    if ref_flops > 0:
        frac = flops / ref_flops
        out["fraction_of_reference_compute"] = frac
        out["percent"] = 100 * frac
        qualifier = "at most " if bound == "at_most" else ""
        out["text"] = (
            f"{W} reaches {R}'s final score ({target:.1f}) with {qualifier}{fmt_percent(100 * frac)} of {R}'s compute "
            f"({fmt_flops(flops)} of {fmt_flops(ref_flops)} FLOPs, {convention} convention)"
        )
    else:
        out["text"] = f"{W} reaches {R}'s final score ({target:.1f}) at {fmt_flops(flops)} FLOPs"
    if bound == "at_most":
        out["text"] += "; already at its first checkpoint, so the true share may be lower"
    if flops <= 0:
        # 0% would read as "RTD needs none of MLM's compute"; it means the shared starting point (the
        # untrained encoder) already scores as high as the reference's final checkpoint: no share to report
        out.update(bound="untrained", fraction_of_reference_compute=None, percent=None)
        out["text"] = (f"The untrained encoder already reaches {R}'s final score ({target:.1f}): on the downstream "
                       f"tasks, {R}'s pre-training has not improved on its starting point")
    return out
