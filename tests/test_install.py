"""The README's set-up: `make install` builds a virtual environment from scratch that runs the tool.

The slow test runs `make install VENV=<tmp>` on this checkout (pip may use its cache and configured indexes),
so the developer's own .venv is never touched. The fast ones check which torch build scripts/install_torch.py
asks pip for on each kind of machine.
"""

import importlib.util
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PIN, INDEX = "torch==2.13.0", "https://download.pytorch.org/whl/cpu"


def install_torch():
    spec = importlib.util.spec_from_file_location("install_torch", ROOT / "scripts" / "install_torch.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_linux_without_gpu_takes_the_cpu_index_and_says_when_it_falls_back():
    plan = install_torch().plan
    assert plan(PIN, INDEX, system="Linux", gpu=False, index_ok=True) == (["--index-url", INDEX, PIN], "")
    args, line = plan(PIN, INDEX, system="Linux", gpu=False, index_ok=False, why="Name or service not known")
    assert args == [PIN]
    assert "\n" not in line and INDEX in line and "Name or service not known" in line and "default index" in line


def test_macos_takes_the_default_index_and_a_gpu_takes_setup_cfg_range():
    plan = install_torch().plan
    assert plan(PIN, INDEX, system="Darwin", gpu=False, index_ok=None) == ([PIN], "")
    args, line = plan(PIN, INDEX, system="Linux", gpu=True, index_ok=None)
    assert args is None and "setup.cfg" in line


def test_an_unreachable_index_is_reported_quickly():
    t0 = time.monotonic()
    ok, why = install_torch().reachable("http://127.0.0.1:9/whl/cpu", timeout=5)  # discard port: refused
    assert not ok and why and time.monotonic() - t0 < 6


def make(*args, timeout):
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}  # under `make test`
    return subprocess.run(["make", "-C", str(ROOT), *args], env=env, capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_make_install_builds_a_fresh_venv_that_runs_electra_bench(tmp_path):
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    own = ROOT / ".venv"
    own_before = sorted(p.name for p in own.iterdir()) if own.is_dir() else None
    venv = tmp_path / "venv"

    proc = make("install", f"VENV={venv}", timeout=1800)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert (venv / "pyvenv.cfg").is_file() and (venv / "bin" / "python").exists()

    cli = subprocess.run([str(venv / "bin" / "electra-bench"), "--help"], capture_output=True, text=True, timeout=120)
    assert cli.returncode == 0, cli.stderr
    assert cli.stdout.startswith("Usage: electra-bench") and "compare" in cli.stdout

    probe = subprocess.run([str(venv / "bin" / "python"), "-c",
                            "import electra_bench, torch; print(electra_bench.__file__); print(torch.version.cuda)"],
                           capture_output=True, text=True, timeout=300)
    assert probe.returncode == 0, probe.stderr
    where, cuda = probe.stdout.split()
    assert Path(where).resolve().is_relative_to(ROOT)  # editable install of this checkout
    fell_back = [ln for ln in out.splitlines() if ln.startswith("install_torch: cannot reach")]
    assert len(fell_back) <= 1
    if not install_torch().has_nvidia_gpu() and not fell_back:
        assert cuda == "None", "the CPU index was reached but torch is a CUDA build"

    # Idempotent: a second run finds nothing to do and keeps the venv.
    created = (venv / "pyvenv.cfg").stat().st_mtime_ns
    t0 = time.monotonic()
    again = make("install", f"VENV={venv}", timeout=120)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout, again.stdout + again.stderr
    assert time.monotonic() - t0 < 10 and (venv / "pyvenv.cfg").stat().st_mtime_ns == created

    assert (sorted(p.name for p in own.iterdir()) if own.is_dir() else None) == own_before
