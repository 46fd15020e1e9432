"""What produced a run: code version, package versions, hardware, threads, seeds, FLOP convention, data
hashes, command line and time -- enough to tell two runs apart, and nothing that names the machine
(no hostname, no user name; the command line is kept as given).
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any, Mapping

import torch

from .. import __version__
from ..choices import FLOP_CONVENTIONS, require

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


def _git(args: list[str], cwd: Path) -> str | None:
    try:
        out = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def git_state(path: str | Path | None = None) -> dict:
    """Commit and dirty flag of the git checkout holding `path` (default: this package); "unknown"
    for both when it is not a git checkout or git is unavailable."""
    where = Path(path) if path is not None else Path(__file__).resolve().parent
    commit = _git(["rev-parse", "HEAD"], where)
    if commit is None:
        return {"commit": "unknown", "dirty": "unknown"}
    status = _git(["status", "--porcelain"], where)
    return {"commit": commit.strip(), "dirty": "unknown" if status is None else bool(status.strip())}


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


def collect(seeds: Mapping[str, Any], convention: str, data_hashes: Mapping[str, str],
            extra: Mapping[str, Any] | None = None) -> dict:
    """The provenance record of a run (written as provenance.json)."""
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
        "seeds": dict(seeds),
        "flop_convention": convention,
        "data_hashes": dict(data_hashes),
        "command_line": list(sys.argv),
        "extra": dict(extra) if extra else {},
    }
