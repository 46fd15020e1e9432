"""What the driver asks SLURM itself, beside submitit (which only submits and reads result files):

- `check`: the partition and its nodes, from `sinfo`, against what every job of the run asks for
  (partition, GPUs, CPUs, memory, time), before the run directory exists and in `--dry-run`; a job that
  no node can take is refused here in one line naming the option to change, not by sbatch later.
- `refusal`: what sbatch said when it refused a job anyway, as one line naming the option to change.
- `states`: each job's state from `squeue`, which answers with or without accounting, and from `sacct`
  for a job squeue no longer lists (gone after MinJobAge; only with accounting). submitit reads states
  with sacct alone, so without accounting it never learns that a job ended without a result.
- `hopeless`: a pending job's reason that no amount of waiting changes (a time limit above the
  partition's, more CPUs than a node has: SLURM's default EnforcePartLimits=NO queues such a job forever).

Every command runs with a timeout; a cluster that does not answer raises `Unreachable`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass, field

from ..errors import BenchError

SLURM_ENV = "ELECTRA_BENCH_SLURM"
DEFAULT_TIMEOUT_MIN = 24 * 60
COMMAND_TIMEOUT_S = 30

# states after which a job never runs again (squeue's and sacct's names); every other state is alive
ENDED = frozenset({"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL",
                   "DEADLINE", "REVOKED", "SPECIAL_EXIT", "PREEMPTED"})


class Unreachable(Exception):
    """A SLURM command is missing or did not answer: the cluster's state cannot be known from here."""


def run(*cmd: str) -> str:
    conf = os.environ.get("SLURM_CONF")
    if conf and not os.path.isfile(conf):  # SLURM's commands would retry reading it for a minute
        raise Unreachable(f"SLURM_CONF names {conf}, which does not exist")
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
    except FileNotFoundError:
        raise Unreachable(f"{cmd[0]} not found") from None
    except subprocess.TimeoutExpired:
        raise Unreachable(f"{cmd[0]} did not answer within {COMMAND_TIMEOUT_S} s") from None
    if proc.returncode != 0:
        raise Unreachable(f"{cmd[0]} exited {proc.returncode}: {one_line(proc.stderr) or 'no message'}")
    return proc.stdout


def one_line(text: str) -> str:
    """A multi-line message (submitit's, sbatch's) whole, on one line: its lines joined, separators dropped."""
    lines = [ln.strip() for ln in str(text).splitlines()]
    return " | ".join(ln for ln in lines if ln and not set(ln) <= set("-="))


def parameters() -> dict:
    """submitit's parameters from ELECTRA_BENCH_SLURM (a JSON object), or {}."""
    text = os.environ.get(SLURM_ENV, "").strip()
    if not text:
        return {}
    try:
        params = json.loads(text)
    except json.JSONDecodeError as e:
        raise BenchError(f"{SLURM_ENV} is not valid JSON ({e.msg}): e.g. '{{\"slurm_partition\": \"gpu\"}}'") from None
    if not isinstance(params, dict):
        raise BenchError(f"{SLURM_ENV} must be a JSON object of submitit parameters, got {type(params).__name__}")
    return params


def cancel(job_ids: list[str]) -> None:
    """scancel, best effort and quietly: a job that has just ended cannot be cancelled, and says so."""
    if job_ids:
        try:
            subprocess.run(["scancel", *job_ids], capture_output=True, timeout=COMMAND_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired):
            pass


# ------------------------------------------------------------------------------------------- requests


def minutes(text: str) -> float | None:
    """SLURM's time format (`infinite`, `MM`, `MM:SS`, `HH:MM:SS`, `D-HH[:MM[:SS]]`) in minutes."""
    text = str(text).strip()
    if text.lower() in ("infinite", "unlimited", "n/a", ""):
        return None
    days, _, rest = text.rpartition("-")
    parts = [int(p) for p in rest.split(":")]
    if days:
        h, m, s = (parts + [0, 0])[:3]
    elif len(parts) == 3:
        h, m, s = parts
    else:
        h, (m, s) = 0, (parts + [0])[:2]
    return int(days or 0) * 1440 + h * 60 + m + s / 60


def megabytes(text: str) -> float:
    """SLURM's memory format (`16000`, `16G`, `16GB`, `512M`) in MB."""
    m = re.fullmatch(r"\s*([\d.]+)\s*([KMGT]?)B?\s*", str(text), re.IGNORECASE)
    if not m:
        raise BenchError(f"{SLURM_ENV}: slurm_mem '{text}' is not a memory size like 16G or 16000")
    return float(m.group(1)) * {"K": 1 / 1024, "": 1, "M": 1, "G": 1024, "T": 1024 ** 2}[m.group(2).upper()]


@dataclass(frozen=True)
class Request:
    """What one job asks SLURM for (one node each). `job` names it in messages."""

    partition: str | None
    gpus: int
    tasks: int
    cpus_per_task: int
    timeout_min: float | None
    mem_mb: float | None
    job: str = "a job"

    @classmethod
    def of(cls, params: dict, gpus: int, tasks: int, cpus_per_task: int, job: str = "a job") -> "Request":
        """From submitit's parameters as the engine sends them (ELECTRA_BENCH_SLURM's over the defaults)."""
        timeout = params.get("slurm_time", params.get("timeout_min", DEFAULT_TIMEOUT_MIN))
        timeout_min = minutes(timeout) if isinstance(timeout, str) else float(timeout)
        mem = params.get("slurm_mem")
        mem_mb = megabytes(mem) if mem is not None else (float(params["mem_gb"]) * 1024 if "mem_gb" in params else None)
        return cls(params.get("slurm_partition"), gpus, tasks, cpus_per_task, timeout_min, mem_mb, job)

    def describe(self) -> str:
        mem = f", {self.mem_mb:.0f} MB" if self.mem_mb else ""
        return (f"{self.gpus} GPU(s), {self.tasks * self.cpus_per_task} CPU(s){mem}, "
                f"{_time(self.timeout_min)} (--gpus-per-run, --threads, {SLURM_ENV})")


def _time(minutes_: float | None) -> str:
    if minutes_ is None:
        return "no time limit"
    return f"{minutes_:.0f} min" if minutes_ < 2 * 60 else f"{minutes_ / 60:.3g} h"


# ----------------------------------------------------------------------------------- the partitions


@dataclass
class Partition:
    name: str
    default: bool
    time_limit_min: float | None
    nodes: list[tuple[int, float, int, str]] = field(default_factory=list)  # (CPUs, memory MB, GPUs, state)

    def describe(self) -> str:
        """`partition debug (1 node: 2 CPUs, 22899 MB, no GPUs; time limit 24 h)`: the most a node has."""
        gpus = max(n[2] for n in self.nodes)
        return (f"partition {self.name} ({len(self.nodes)} node{'s' if len(self.nodes) > 1 else ''}: "
                f"{'up to ' if len(self.nodes) > 1 else ''}{max(n[0] for n in self.nodes)} CPUs, "
                f"{max(n[1] for n in self.nodes):.0f} MB, {f'{gpus} GPUs' if gpus else 'no GPUs'}; "
                f"time limit {_time(self.time_limit_min)})")


def _gpus(gres: str) -> int:
    """GPUs in sinfo's gres column (`gpu:4`, `gpu:a100:4(S:0-1)`, `(null)`)."""
    total = 0
    for item in gres.split(","):
        m = re.match(r"gpu(?::[^:(]+)?:(\d+)", item.strip())
        if m:
            total += int(m.group(1))
    return total


def partitions() -> dict[str, Partition]:
    """The cluster's partitions and their nodes, by `sinfo` (raises Unreachable)."""
    out = run("sinfo", "-h", "-N", "-o", "%P|%c|%m|%G|%l|%T")
    parts: dict[str, Partition] = {}
    for line in out.splitlines():
        fields = line.strip().split("|")
        if len(fields) != 6:
            continue
        name, cpus, mem, gres, limit, state = fields
        default = name.endswith("*")
        name = name.rstrip("*")
        p = parts.setdefault(name, Partition(name, default, minutes(limit)))
        p.nodes.append((int(cpus.rstrip("+")), float(mem.rstrip("+")), _gpus(gres), state))
    if not parts:
        raise Unreachable("sinfo lists no partition")
    return parts


def check(request: Request, parts: dict[str, Partition] | None = None) -> str:
    """Whether some node of the request's partition can take the job and its time fits the partition's
    limit; the partition's description when it does, else BenchError naming the option to change."""
    parts = partitions() if parts is None else parts
    names = ", ".join(sorted(parts))
    if request.partition is not None:
        if request.partition not in parts:
            raise BenchError(f"partition '{request.partition}' ({SLURM_ENV}'s slurm_partition) is not one of this "
                             f"cluster's ({names}): name one of those")
        part = parts[request.partition]
    else:
        defaults = [p for p in parts.values() if p.default]
        if not defaults:
            raise BenchError(f"this cluster has no default partition: name one of {names} in {SLURM_ENV}, e.g. "
                             f"{SLURM_ENV}='{{\"slurm_partition\": \"{sorted(parts)[0]}\"}}'")
        part = defaults[0]
    cpus = request.tasks * request.cpus_per_task
    if not any(n[2] >= request.gpus and n[0] >= cpus and (request.mem_mb is None or n[1] >= request.mem_mb)
               for n in part.nodes):
        raise BenchError(f"{request.job} asks for {_short(request)}; no node of {part.describe()} has that: "
                         f"{_what_to_change(request, part)}")
    if part.time_limit_min is not None and request.timeout_min is not None and request.timeout_min > part.time_limit_min:
        raise BenchError(_time_message(request, part.name, part.time_limit_min))
    return part.describe()


def _short(request: Request) -> str:
    mem = f", {request.mem_mb:.0f} MB" if request.mem_mb else ""
    cpus = request.tasks * request.cpus_per_task
    return f"{request.gpus} GPU{'s' * (request.gpus != 1)}, {cpus} CPU{'s' * (cpus != 1)}{mem}"


def _what_to_change(request: Request, part: Partition) -> str:
    most_gpus = max(n[2] for n in part.nodes)
    most_cpus = max(n[0] for n in part.nodes)
    most_mem = max(n[1] for n in part.nodes)
    fixes = []
    if request.gpus and not most_gpus:
        fixes.append(f"this partition has no GPUs: run with --device cpu, or name a GPU partition in {SLURM_ENV}'s "
                     f"slurm_partition")
    elif request.gpus > most_gpus:
        fixes.append(f"at most {most_gpus} GPUs on a node: lower --gpus-per-run to {most_gpus}")
    cpus = request.tasks * request.cpus_per_task
    if cpus > most_cpus and request.tasks > 1:
        fixes.append(f"at most {most_cpus} CPUs on a node, and the job's {request.tasks} processes ask for "
                     f"{request.cpus_per_task} each (--gpus-per-run x --threads): lower --gpus-per-run or --threads")
    elif cpus > most_cpus:
        fixes.append(f"at most {most_cpus} CPUs on a node: lower --threads to {most_cpus}")
    if request.mem_mb is not None and request.mem_mb > most_mem:
        fixes.append(f"at most {most_mem:.0f} MB on a node: lower mem_gb (or slurm_mem) in {SLURM_ENV}")
    return "; ".join(fixes) or "no single node has all of it at once: ask for less of one"


def _time_message(request: Request, partition: str | None, limit_min: float | None) -> str:
    limit = (f"partition {partition} allows {_time(limit_min)}" if limit_min is not None
             else "a limit of the partition or of your account is lower")
    fix = f"{limit_min:.0f}" if limit_min is not None else "240"
    return (f"{request.job} asks for {_time(request.timeout_min)} (timeout_min in {SLURM_ENV}, default "
            f"{DEFAULT_TIMEOUT_MIN}); {limit}: set e.g. {SLURM_ENV}='{{\"timeout_min\": {fix}}}' (a pre-training "
            f"job stopped by its time limit is requeued and resumes)")


# ------------------------------------------------------------------------------------------- refusals


def refusal(text: str, request: Request) -> BenchError:
    """sbatch's refusal of `request` (its stderr) as one line naming the option to change."""
    said = one_line(re.sub(r"sbatch: error: (Batch job submission failed: )?", "", str(text))) or "no message"
    lower = said.lower()
    if "invalid partition" in lower:
        try:
            names = ", ".join(sorted(partitions()))
        except Unreachable:
            names = "see sinfo"
        return BenchError(f"sbatch refused {request.job}: {said}: partition '{request.partition}' "
                          f"({SLURM_ENV}'s slurm_partition) is not one of this cluster's ({names})")
    if "time limit" in lower:
        try:
            check(request)  # names the partition's limit when it is the cause
            detail = _time_message(request, None, None)
        except BenchError as e:
            detail = str(e)
        except Unreachable:
            detail = _time_message(request, None, None)
        return BenchError(f"sbatch refused {request.job}: {said}: {detail}")
    if any(s in lower for s in ("node configuration is not available", "memory specification",
                                 "more processors requested", "generic resource", "gres")):
        try:
            check(request)
            detail = f"the job asks for {_short(request)}"
        except BenchError as e:
            detail = str(e)
        except Unreachable:
            detail = (f"the job asks for {_short(request)}: on a CPU cluster run with --device cpu; otherwise "
                      f"lower --gpus-per-run, --threads, or mem_gb in {SLURM_ENV}")
        return BenchError(f"sbatch refused {request.job}: {said}: {detail}")
    if "account" in lower or "qos" in lower:
        return BenchError(f"sbatch refused {request.job}: {said}: set slurm_account / slurm_qos in {SLURM_ENV} to "
                          f"ones you may use (sacctmgr show assoc user=$USER)")
    return BenchError(f"sbatch refused {request.job}: {said} (it asked for {request.describe()})")


# ---------------------------------------------------------------------------------------- job states


@dataclass(frozen=True)
class State:
    name: str  # RUNNING, PENDING, CANCELLED, ...; GONE: neither squeue nor sacct knows the job
    reason: str = ""

    @property
    def ended(self) -> bool:
        return self.name in ENDED or self.name == "GONE"


def states(job_ids: list[str]) -> dict[str, State]:
    """Each job's state. squeue answers with or without accounting while the controller keeps the job
    (MinJobAge after it ends); sacct, with accounting, after that. A job neither knows is GONE: it ended
    and its state is lost. Raises Unreachable when squeue does not answer."""
    if not job_ids:
        return {}
    wanted = set(job_ids)
    found: dict[str, State] = {}
    for line in run("squeue", "-h", "--me", "-t", "all", "-o", "%i|%T|%r").splitlines():
        job_id, _, rest = line.strip().partition("|")
        state, _, reason = rest.partition("|")
        if job_id in wanted:
            found[job_id] = State(state, "" if reason in ("None", "(null)") else reason)
    missing = sorted(wanted - set(found))
    if missing:
        try:
            out = run("sacct", "-n", "-X", "-P", "-o", "JobID,State", "-j", ",".join(missing))
        except Unreachable:
            out = ""  # no accounting: nothing more to learn
        for line in out.splitlines():
            job_id, _, state = line.strip().partition("|")
            if job_id in wanted and state:
                found[job_id] = State(state.split()[0])  # "CANCELLED by 0"
    return {j: found.get(j, State("GONE")) for j in job_ids}


NEVER_STARTS = {
    "PartitionTimeLimit": "time", "AssocMaxWallDurationPerJobLimit": "time", "QOSMaxWallDurationPerJobLimit": "time",
    "PartitionConfig": "node", "PartitionNodeLimit": "node", "BadConstraints": "node",
    "InvalidAccount": "account", "InvalidQOS": "account", "AccountNotAllowed": "account", "QOSNotAllowed": "account",
}


def hopeless(state: State, request: Request) -> str | None:
    """Why a pending job can never start (one line naming the option to change), or None: SLURM keeps
    such a job queued forever unless the cluster enforces partition limits at submission."""
    kind = NEVER_STARTS.get(state.reason) if state.name == "PENDING" else None
    if kind is None:
        return None
    try:
        check(request)  # names the option when the partition's own limits are the cause
        detail = None
    except BenchError as e:
        detail = str(e)
    except Unreachable:
        detail = None
    if detail is None:
        detail = {"time": _time_message(request, None, None),
                  "node": f"{request.job} asks for {request.describe()}",
                  "account": f"set slurm_account / slurm_qos in {SLURM_ENV} to ones you may use (sacctmgr show "
                             f"assoc user=$USER)"}[kind]
    return f"SLURM will never start it ({state.reason}): {detail}"
