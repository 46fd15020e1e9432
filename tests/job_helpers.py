"""Toy jobs for tests/test_experiments_jobs.py, in a module of their own: a spawned worker imports it to run them,
and it imports no torch (a worker starts in a second instead of several)."""

import os
import signal
import time

from electra_bench.errors import BenchError
from electra_bench.experiments.devices import worker_slot


def value(x):
    return x


def fail(message):
    raise BenchError(message)


def die_once(marker: str):
    """Kill this worker the first time (a lost node, an OOM kill), answer the second."""
    if not os.path.exists(marker):
        open(marker, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    return "survived"


def slot_after(seconds: float):
    time.sleep(seconds)
    return worker_slot()


def sleep_once(marker: str, seconds: float, times: int = 1):
    """The first `times` attempts run long (a job cancelled mid-run in the tests; each adds a line to
    `marker` once it runs), the next one answers at once. SIGTERM ends it at once, as it stops a
    pre-training job at its next step (submitit's own handler would ignore it until SLURM's KillWait)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    started = open(marker).read().count("\n") if os.path.exists(marker) else 0
    if started < times:
        with open(marker, "a") as f:
            f.write("started\n")
        time.sleep(seconds)
        return "slept"
    return "again"
