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
