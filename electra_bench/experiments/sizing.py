"""Sizing a job graph before running it (`--dry-run`): each job's FLOPs, its device-hours at a stated
MFU, and the wall time of the whole graph on N devices.

FLOPs: a pre-training job is its plan (the project's FLOP counter, in the run's convention); a scoring
job is the forward and backward passes of fine-tuning (3 x forward per training example per epoch, the
paper's recipe) plus a forward per evaluation example, or for the probe a forward per pooled training
and evaluation example, at the encoder's inference FLOPs per sequence (`flops.inference_flops`, at the
fine-tuning length).

Device-hours = FLOPs / (PEAK_FLOPS x MFU). PEAK_FLOPS is the dense bf16 matmul peak of an H100/H200 SXM
as NVIDIA states it (989 TFLOP/s; the 1979 figure assumes 2:4 sparsity, which nothing here uses); a
measured large bf16 matmul on an H200 reaches about 790 TFLOP/s, so MFU here is against the datasheet.
MFU 0.40 is a stated assumption for the paper's base/large presets; the small encoder (hidden 256) runs
far below it, so its rows are a lower bound on time (docs/scheduling.md).
"""

from __future__ import annotations

import dataclasses
import heapq

from ..flops import inference_flops
from .jobs import Job, topological

PEAK_FLOPS = 989e12  # H100/H200 SXM dense bf16, datasheet
MFU = 0.40
FINETUNE_OVER_FORWARD = 3.0  # forward + backward (2 x forward)

# GLUE's split sizes (train, dev; MNLI: dev matched + mismatched), for sizing on a machine without the
# data: the GLUE paper (Wang et al., 2018), Table 1.
GLUE_SIZES = {"cola": (8551, 1043), "sst2": (67349, 872), "mrpc": (3668, 408), "stsb": (5749, 1500),
              "qqp": (363846, 40430), "mnli": (392702, 19647), "qnli": (104743, 5463), "rte": (2490, 277)}


def forward_flops_per_sequence(preset, max_len: int, convention: str) -> float:
    """One forward of the fine-tuned encoder on one sequence of `max_len` tokens."""
    return inference_flops(dataclasses.replace(preset, seq_len=max_len), convention)


def task_flops(forward: float, protocol: str, n_train: int, n_eval: int, epochs: int, seeds: int,
               probe_pool: int, max_eval: int | None) -> float:
    """FLOPs of scoring one encoder on one task with every evaluation seed."""
    n_eval = min(n_eval, max_eval) if max_eval else n_eval
    if protocol == "finetune":  # each seed fine-tunes its own copy
        return seeds * forward * (FINETUNE_OVER_FORWARD * epochs * n_train + n_eval)
    if protocol == "probe":  # features once per encoder and task; the probes themselves are negligible
        return forward * (min(probe_pool, n_train) + n_eval)
    return seeds * forward * n_eval  # fewshot: a forward per evaluation example and seed


def device_hours(flops: float, peak: float = PEAK_FLOPS, mfu: float = MFU) -> float:
    return flops / (peak * mfu) / 3600


def simulate(jobs: list[Job], n_devices: int, peak: float = PEAK_FLOPS, mfu: float = MFU) -> float:
    """Wall hours of the graph on `n_devices`, scheduled as `run_graph` does (listed order, a job starts
    when its dependencies are done and enough devices are free)."""
    hours = {j.id: device_hours(j.flops, peak, mfu) / max(1, j.devices) for j in jobs}
    end: dict[str, float] = {}
    free, now, running = n_devices, 0.0, []  # running: heap of (end time, id, devices)
    pending = topological(jobs)
    while pending or running:
        for j in list(pending):
            if all(d in end and end[d] <= now for d in j.deps) and j.devices <= free:
                pending.remove(j)
                free -= j.devices
                heapq.heappush(running, (now + hours[j.id], j.id, j.devices))
        if not running:
            break
        t, job_id, width = heapq.heappop(running)
        now, free, end[job_id] = t, free + width, t
    return now


def table(jobs: list[Job], n_devices: int, peak: float = PEAK_FLOPS, mfu: float = MFU) -> dict:
    """The --dry-run report: one row per job, the totals, and the wall time on `n_devices`."""
    rows = [{"id": j.id, "kind": j.kind, "devices": j.devices, "deps": list(j.deps), "flops": j.flops,
             "device_hours": device_hours(j.flops, peak, mfu)} for j in jobs]
    by_kind: dict[str, dict] = {}
    for r in rows:
        k = by_kind.setdefault(r["kind"], {"jobs": 0, "flops": 0.0, "device_hours": 0.0})
        k["jobs"] += 1
        k["flops"] += r["flops"]
        k["device_hours"] += r["device_hours"]
    return {"jobs": rows, "by_kind": by_kind, "flops": sum(r["flops"] for r in rows),
            "device_hours": sum(r["device_hours"] for r in rows), "devices": n_devices,
            "wall_hours": simulate(jobs, n_devices, peak, mfu), "peak_flops": peak, "mfu": mfu}


def render(report: dict, max_rows: int = 40) -> str:
    """The table as text: the largest jobs first when there are many, then the totals by kind."""
    rows = report["jobs"]
    shown = rows if len(rows) <= max_rows else sorted(rows, key=lambda r: -r["flops"])[:max_rows]
    width = max([len(r["id"]) for r in shown] + [3])
    lines = [f"{'job':<{width}}  {'kind':<8} {'dev':>3} {'FLOPs':>9} {'device-h':>9}  after"]
    for r in shown:
        deps = ", ".join(r["deps"]) if len(r["deps"]) <= 2 else f"{len(r['deps'])} jobs"
        lines.append(f"{r['id']:<{width}}  {r['kind']:<8} {r['devices']:>3} {r['flops']:>9.2e} "
                     f"{r['device_hours']:>9.3g}  {deps}")
    if len(shown) < len(rows):
        lines.append(f"... and {len(rows) - len(shown)} smaller jobs")
    for kind, k in report["by_kind"].items():
        lines.append(f"{kind}: {k['jobs']} jobs, {k['flops']:.3g} FLOPs, {k['device_hours']:.3g} device-hours")
    lines.append(f"total: {len(rows)} jobs, {report['flops']:.3g} FLOPs, {report['device_hours']:.3g} device-hours "
                 f"at {report['mfu']:.0%} MFU of {report['peak_flops'] / 1e12:.0f} TFLOP/s; wall on "
                 f"{report['devices']} device(s): {report['wall_hours']:.3g} h")
    return "\n".join(lines)
