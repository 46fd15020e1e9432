"""Sizing a job graph before running it (`--dry-run`): each job's FLOPs, its device-hours at a stated
MFU, and the wall time of the whole graph on N devices.

FLOPs: a pre-training job is its plan (the project's FLOP counter, in the run's convention); a scoring
job is the forward and backward passes of fine-tuning (3 x forward per training example per epoch, the
paper's recipe) plus a forward per evaluation example, or for the probe a forward per pooled training
and evaluation example, at the encoder's inference FLOPs per sequence (`flops.inference_flops`, at the
fine-tuning length).

Device-hours = FLOPs / the speed of one device at that job (a `Rate`, in FLOP/s of the run's convention).
experiments/target.py gives each job its rate on the device kind the plan is for: a pre-training run of a
preset and objective whose speed was measured (experiments/hardware.py) runs at that speed; anything else
at an assumed MFU of `MFU` against the kind's datasheet peak (989 TFLOP/s for an H100/H200 SXM, dense bf16;
a measured large bf16 matmul on an H200 reaches about 750 TFLOP/s). The rate says which it is.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Callable

from ..flops import inference_flops
from .jobs import Job, topological

PEAK_FLOPS = 989e12  # H100/H200 SXM dense bf16, datasheet
MFU = 0.40  # assumed where nothing was measured: reasonable for base/large at length 512, far above small's
FINETUNE_OVER_FORWARD = 3.0  # forward + backward (2 x forward)
# The zero-shot reading's PLL runs a sentence of n pieces as n masked copies of n + 2 tokens: at ebs-3's
# minimal pairs (about 25 pieces) in a 64-token window, about 10 forwards of the full window a sentence,
# the discriminator and a generator a quarter as wide adding little (score/zeroshot.py)
ZEROSHOT_FORWARDS_PER_SENTENCE = 10.0

# GLUE's split sizes (train, dev; MNLI: dev matched + mismatched), for sizing on a machine without the
# data: the GLUE paper (Wang et al., 2018), Table 1.
GLUE_SIZES = {"cola": (8551, 1043), "sst2": (67349, 872), "mrpc": (3668, 408), "stsb": (5749, 1500),
              "qqp": (363846, 40430), "mnli": (392702, 19647), "qnli": (104743, 5463), "rte": (2490, 277)}


def forward_flops_per_sequence(preset, max_len: int, convention: str) -> float:
    """One forward of the fine-tuned encoder on one sequence of `max_len` tokens."""
    return inference_flops(preset.with_knobs(seq_len=max_len), convention)


def task_flops(forward: float, protocol: str, n_train: int, n_eval: int, epochs: int, seeds: int,
               probe_pool: int, max_eval: int | None, tuned: tuple[int, int, int] | None = None) -> float:
    """FLOPs of scoring one encoder on one task with every evaluation seed. `tuned` (finetune-tuned:
    score/tuning.selection_work) = (selection examples x epochs, held-out predictions, the most epochs a
    final fit may take): its selection once per encoder and task, then each seed's final fit, counted at
    the grid's most epochs (an upper bound: the choice is not known before scoring)."""
    n_eval = min(n_eval, max_eval) if max_eval else n_eval
    if protocol == "finetune":  # each seed fine-tunes its own copy
        return seeds * forward * (FINETUNE_OVER_FORWARD * epochs * n_train + n_eval)
    if protocol == "finetune-tuned":
        if tuned is None:
            raise ValueError("task_flops: finetune-tuned needs its selection's work (tuned=)")
        selection, heldout, final_epochs = tuned
        return forward * (FINETUNE_OVER_FORWARD * selection + heldout) + \
            seeds * forward * (FINETUNE_OVER_FORWARD * final_epochs * n_train + n_eval)
    if protocol == "zeroshot":  # once per encoder (the seeds only break ties); n masked copies per sentence
        return forward * 2 * n_eval * ZEROSHOT_FORWARDS_PER_SENTENCE
    if protocol == "probe":  # features once per encoder and task; the probes themselves are negligible
        return forward * (min(probe_pool, n_train) + n_eval)
    return seeds * forward * n_eval  # fewshot: a forward per evaluation example and seed


@dataclass(frozen=True)
class Rate:
    """How fast one device runs a job: FLOP/s in the run's convention, and how that is known."""
    flops_per_s: float
    source: str  # "measured ..." or "assumed ..."
    mfu: float | None  # flops_per_s against the target's datasheet peak (in the run's convention); a CPU has none


ASSUMED = Rate(PEAK_FLOPS * MFU, f"assumed: {MFU:.0%} MFU of {PEAK_FLOPS / 1e12:.0f} TFLOP/s", MFU)


def device_hours(flops: float, rate: Rate = ASSUMED) -> float:
    return flops / rate.flops_per_s / 3600


def simulate(jobs: list[Job], n_devices: int, rate_of: Callable[[Job], Rate] = lambda job: ASSUMED) -> float:
    """Wall hours of the graph on `n_devices`, scheduled as `run_graph` does (listed order, a job starts
    when its dependencies are done and enough devices are free)."""
    hours = {j.id: device_hours(j.flops, rate_of(j)) / max(1, j.devices) for j in jobs}
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


def rate_key(job: Job) -> str:
    """What a job's rate depends on: the pre-training run's objective (and sweep point), or "score"."""
    if job.kind != "pretrain":
        return job.kind
    head, _, objective_seed = job.id.rpartition("pretrain/")
    return f"{head}pretrain/{objective_seed.split('/')[0]}"


def table(jobs: list[Job], n_devices: int, rate_of: Callable[[Job], Rate] = lambda job: ASSUMED) -> dict:
    """The --dry-run report: one row per job, the totals, the wall time on `n_devices`, and the rate each
    kind of job was sized at (`speeds`, keyed by `rate_key`)."""
    rows = [{"id": j.id, "kind": j.kind, "devices": j.devices, "deps": list(j.deps), "flops": j.flops,
             "device_hours": device_hours(j.flops, rate_of(j))} for j in jobs]
    speeds = {}
    for j in jobs:
        r = rate_of(j)
        speeds.setdefault(rate_key(j), {"flops_per_s": r.flops_per_s, "mfu": r.mfu, "source": r.source})
    by_kind: dict[str, dict] = {}
    for r in rows:
        k = by_kind.setdefault(r["kind"], {"jobs": 0, "flops": 0.0, "device_hours": 0.0})
        k["jobs"] += 1
        k["flops"] += r["flops"]
        k["device_hours"] += r["device_hours"]
    return {"jobs": rows, "by_kind": by_kind, "flops": sum(r["flops"] for r in rows),
            "device_hours": sum(r["device_hours"] for r in rows), "devices": n_devices,
            "wall_hours": simulate(jobs, n_devices, rate_of), "speeds": speeds}


def fmt_hours(hours: float) -> str:
    """`4 h 40 min`, `12 min`, `40 s`: a wall time as a person reads it."""
    seconds = round(hours * 3600)
    if seconds < 60:
        return f"{seconds} s"
    h, m = divmod(round(seconds / 60), 60)
    return f"{h} h {m:02d} min" if h else f"{m} min"


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
    target = report.get("target")
    cpu = bool(target) and target["peak_flops"] is None
    where = ("" if not target else " on this machine's CPU" if cpu else
             f" on {target['kind']}" + (" (a reference)" if target["runs_here"] else ""))
    if target:
        need = ", ".join(f"{b / 2**30:.3g} GiB ({o})" for o, b in target["step_memory_bytes"].items())
        memory = f"{target['memory_bytes'] / 1e9:.0f} GB" if target["memory_bytes"] else "unknown"
        peak = "" if cpu else f"{target['peak_flops'] / 1e12:.0f} TFLOP/s dense bf16"
        if cpu:
            lines.append(f"target: this machine's CPU ({target['why']}; {memory} available; one pre-training step "
                         f"needs about {need} per process); hours at the speeds measured here")
        elif target["runs_here"]:
            lines.append(f"target: this machine ({memory} available on {target['memory_of']}; one pre-training step "
                         f"needs about {need} per process); hours sized for an {target['kind']} ({peak}) as a "
                         f"reference")
        else:
            lines.append(f"target: {target['kind']} ({target['why']}): {memory} of memory ({target['memory_of']}), "
                         f"{peak} peak; one pre-training step needs about {need} per process")
    if report.get("cluster"):
        lines.append(f"cluster: {report['cluster']}")
    for key, speed in report.get("speeds", {}).items():
        mfu = f" ({speed['mfu']:.1%} MFU)" if speed["mfu"] is not None else ""
        rate = (f"{speed['flops_per_s'] / 1e9:.3g} GFLOP/s per CPU worker" if cpu else
                f"{speed['flops_per_s'] / 1e12:.3g} TFLOP/s per device")
        lines.append(f"speed of {key}: {rate}{mfu}, {speed['source']}")
    devices = f"{report['devices']} CPU worker(s)" if cpu else f"{report['devices']} device(s)"
    lines.append(f"total: {len(rows)} jobs, {report['flops']:.3g} FLOPs, {report['device_hours']:.3g} device-hours"
                 f"{where}; wall on {devices}: {report['wall_hours']:.3g} h ({fmt_hours(report['wall_hours'])})")
    return "\n".join(lines)
