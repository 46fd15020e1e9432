"""What produced a run: code version, package versions, hardware, threads, seeds, FLOP convention, data
hashes, command line and time -- enough to tell two runs apart, and nothing that names the machine
(no hostname, no user name; the command line is kept as given).
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import sys
from importlib import metadata
from pathlib import Path
from typing import Any, Mapping

import torch

from .. import __version__
from ..choices import FLOP_CONVENTIONS, require
from .commit_info import git

SCHEMA_VERSION = 1

# distribution name -> key in the record
PACKAGES = {
    "torch": "torch",
    "numpy": "numpy",
    "pandas": "pandas",
    "scikit-learn": "sklearn",
    "scipy": "scipy",
    "tokenizers": "tokenizers",
    "fvcore": "fvcore",
    "matplotlib": "matplotlib",
    "safetensors": "safetensors",
    "electra-bench": "electra_bench",
}


def git_state(path: str | Path | None = None) -> dict:
    """Commit and dirty flag of the git checkout holding `path` (default: this package); "unknown"
    for both when it is not a git checkout or git is unavailable."""
    where = Path(path) if path is not None else Path(__file__).resolve().parent
    commit = git(["rev-parse", "HEAD"], where)
    if commit is None:
        return {"commit": "unknown", "dirty": "unknown"}
    status = git(["status", "--porcelain"], where, allow_empty=True)
    return {"commit": commit, "dirty": "unknown" if status is None else bool(status)}


def package_versions() -> dict:
    versions = {"python": platform.python_version()}
    for dist, key in PACKAGES.items():
        try:
            versions[key] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[key] = None
    if versions.get("electra_bench") is None:  # running from a checkout that is not pip-installed
        versions["electra_bench"] = __version__
    return versions


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _ram_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def hardware() -> dict:
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    info: dict[str, Any] = {
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpu_usable": usable,
        "ram_bytes": _ram_bytes(),
        "machine": platform.machine(),
        "os": f"{platform.system()} {platform.release()}",
        "gpu_count": 0,
        "gpus": [],
    }
    torch_info: dict[str, Any] = {}
    try:
        torch_info = {
            "num_threads": torch.get_num_threads(),
            "num_interop_threads": torch.get_num_interop_threads(),
            "cuda_available": bool(torch.cuda.is_available()),
            "cuda_version": torch.version.cuda,
        }
        if torch.cuda.is_available():
            n = torch.cuda.device_count()
            info["gpu_count"] = n
            info["gpus"] = [torch.cuda.get_device_name(i) for i in range(n)]
    except Exception:  # no torch, or a broken CUDA setup: record what we can
        torch_info = {"num_threads": None}
    info["torch"] = torch_info
    return info


# CPU features that decide which kernels torch and the BLAS dispatch to (so, the floating-point results)
_ISA_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "avx512_fp16", "amx_bf16",
              "amx_tile", "asimd", "sve")
# environment variables that change those choices or the thread counts
_NUMERIC_ENV = ("ATEN_CPU_CAPABILITY", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                "OPENBLAS_CORETYPE", "MKL_CBWR", "MKL_ENABLE_INSTRUCTIONS", "CUBLAS_WORKSPACE_CONFIG")


def _cpu_flags() -> list[str]:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    have = set(line.split(":", 1)[1].split())
                    return [x for x in _ISA_FLAGS if x in have]
    except OSError:
        pass
    return []


def numerics(threads: int | None = None, device: str | None = None) -> dict:
    """What changes floating-point results between two runs of the same code and seeds (docs/results.md,
    "Reproducibility"): the CPU model, the instruction set torch dispatches its kernels to (and the CPU
    features behind it), torch's build (git hash, BLAS, OpenMP), the threads each worker computes with,
    the device, and the environment variables that override any of these."""
    lines = torch.__config__.parallel_info().splitlines() + torch.__config__.show().splitlines()
    blas = next((ln.strip() for ln in lines if "Math Kernel Library" in ln or "OpenBLAS" in ln), None)
    try:
        capability = torch.backends.cpu.get_cpu_capability()
    except Exception:  # older torch
        capability = None
    return {
        "cpu_model": _cpu_model(),
        "cpu_capability": capability,
        "cpu_flags": _cpu_flags(),
        "torch_version": torch.__version__,
        "torch_git": torch.version.git_version,
        "torch_cuda": torch.version.cuda,
        "blas": blas,
        "openmp": bool(torch.backends.openmp.is_available()),
        "threads": threads if threads is not None else torch.get_num_threads(),
        "device": device,
        "gpus": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        if torch.cuda.is_available() else [],
        "env": {k: os.environ[k] for k in _NUMERIC_ENV if k in os.environ},
    }


def collect(seeds: Mapping[str, Any], convention: str, data_hashes: Mapping[str, str],
            extra: Mapping[str, Any] | None = None, *, threads: int | None = None, device: str | None = None) -> dict:
    """The provenance record of a run (written as provenance.json). `threads`, `device`: what the run's
    workers compute with (the numerics block)."""
    require("FLOP convention", convention, FLOP_CONVENTIONS)
    hw = hardware()
    torch_info = hw.pop("torch")
    return {
        "schema_version": SCHEMA_VERSION,
        "created_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "git": git_state(),
        "versions": package_versions(),
        "hardware": hw,
        "torch": torch_info,
        "numerics": numerics(threads, device),
        "seeds": dict(seeds),
        "flop_convention": convention,
        "data_hashes": dict(data_hashes),
        "command_line": list(sys.argv),
        "extra": dict(extra) if extra else {},
    }
