#!/usr/bin/env python
"""Install the right torch build into the running python (the project venv), before `pip install -e .`.

`make install` runs it with the venv's python:

    .venv/bin/python scripts/install_torch.py torch==2.13.0 https://download.pytorch.org/whl/cpu

- NVIDIA GPU (`nvidia-smi -L` works): installs nothing; `pip install -e .` then takes torch from setup.cfg's
  range off pip's default index, which on Linux is a CUDA build.
- macOS: PIN from pip's default index. PyPI's macOS wheels are the only torch builds for macOS (CPU, plus MPS
  on Apple silicon); there is no CUDA build to avoid.
- Anything else without a GPU (Linux): PIN from PyTorch's CPU wheel index, because there a bare `torch` from
  PyPI is the CUDA build and pulls ~20 nvidia-* packages (several GB). Where that index cannot be reached
  within 5 s (offline mirrors, firewalls), PIN from pip's default index instead, with one line saying so.
"""

from __future__ import annotations

import platform
import shutil
import subprocess
import sys
import urllib.error
import urllib.request


def has_nvidia_gpu() -> bool:
    if shutil.which("nvidia-smi") is None:
        return False
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def reachable(index: str, timeout: float = 5.0) -> tuple[bool, str]:
    """Whether `index` answers at all within `timeout` seconds (any HTTP status counts), and why not."""
    url = index.rstrip("/") + "/torch/"
    try:
        urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=timeout).close()
    except urllib.error.HTTPError:
        return True, ""
    except (OSError, ValueError) as e:  # URLError, timeouts and socket errors are OSErrors
        return False, str(getattr(e, "reason", e))
    return True, ""


def plan(pin: str, index: str, *, system: str, gpu: bool, index_ok: bool | None, why: str = "") -> tuple[list[str] | None, str]:
    """(pip install arguments or None for nothing to install, one line to print or "")."""
    if gpu:
        return None, "NVIDIA GPU found: torch comes from setup.cfg's range on pip's default index"
    if system == "Darwin":
        return [pin], ""
    if index_ok:
        return ["--index-url", index, pin], ""
    return [pin], (f"cannot reach {index} ({why or 'no answer'}); installing {pin} from pip's default index "
                   f"instead (on Linux that is a CUDA build unless your index serves a CPU one)")


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(f"usage: {sys.argv[0]} PIN INDEX_URL", file=sys.stderr)
        return 2
    pin, index = argv
    system, gpu = platform.system(), has_nvidia_gpu()
    index_ok, why = (None, "") if gpu or system == "Darwin" else reachable(index)
    args, line = plan(pin, index, system=system, gpu=gpu, index_ok=index_ok, why=why)
    if line:
        print(f"install_torch: {line}", flush=True)
    if args is None:
        return 0
    return subprocess.run([sys.executable, "-m", "pip", "install", "-q", *args]).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
