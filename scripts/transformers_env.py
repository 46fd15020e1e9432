"""A second, small Python environment holding an older transformers, to check that exports load there.

    python scripts/transformers_env.py                    # transformers 4.45.0 in .cache/transformers-4.45.0
    python scripts/transformers_env.py --version 4.46.3   # another one
    make transformers4-env                                # the same as the first line, with the project's venv

It is a virtual environment without pip of its own. Its site-packages hold transformers==VERSION and only
what that version needs that differs from, or is missing in, the environment that builds it (for 4.45:
tokenizers 0.20, huggingface_hub < 1, requests and its four dependencies), installed by this environment's
pip (`pip --python`). After its own site-packages it sees the building environment's (a .pth line), so
torch, numpy and safetensors are not installed twice: 26 s and 116 MB here (2 cores, load 5, a local package
mirror), against minutes and gigabytes for a second torch. pip never touches the building environment (a package found there is "outside
environment" to it). A stamp file records what was built; a matching environment is reused as it is, any
other one (another version, another base environment, a half-finished build) is removed and built again.

tests/test_transformers4.py builds it (or reuses it) and loads exports with it; `.cache/` is git-ignored.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_VERSION = "4.45.0"  # = electra_bench.interop.hf_names.OLDEST_TRANSFORMERS (a test checks they agree)
STAMP = "electra-bench-env.json"


class BuildError(Exception):
    """The environment could not be built (no package index reachable, no such version, ...)."""


def default_dir(version: str) -> Path:
    return ROOT / ".cache" / f"transformers-{version}"


def _python(env: Path) -> Path:
    return env / "bin" / "python"


def _wanted(version: str) -> dict:
    """What the stamp must say for an environment to be reused."""
    return {"transformers": version, "base_site_packages": sysconfig.get_paths()["purelib"],
            "python": sys.version.split()[0]}


def _reusable(env: Path, version: str) -> bool:
    try:
        return json.loads((env / STAMP).read_text()) == _wanted(version) and _python(env).exists()
    except (OSError, ValueError):
        return False


def _run(cmd: list[str], timeout: float) -> None:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise BuildError(f"{' '.join(cmd[:4])} ... ran past {timeout:.0f} s") from None
    if r.returncode != 0:
        tail = [ln for ln in (r.stderr + r.stdout).splitlines() if ln.strip() and not ln.startswith("WARNING")]
        raise BuildError(f"{' '.join(cmd[:4])} ... exited {r.returncode}: {' | '.join(tail[-3:])[:400]}")


def ensure(version: str = DEFAULT_VERSION, env: Path | None = None, timeout: float = 900) -> Path:
    """The environment's python, built first unless a matching one exists."""
    env = Path(env or default_dir(version))
    if _reusable(env, version):
        return _python(env)
    shutil.rmtree(env, ignore_errors=True)
    env.parent.mkdir(parents=True, exist_ok=True)
    try:
        _run([sys.executable, "-m", "venv", "--without-pip", str(env)], timeout=120)
        site = subprocess.run([str(_python(env)), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              capture_output=True, text=True, check=True).stdout.strip()
        # after its own site-packages: this environment's, for torch, numpy, safetensors and the rest
        Path(site, "_electra_bench_base.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
        _run([sys.executable, "-m", "pip", "--python", str(_python(env)), "install", "--quiet",
              "--disable-pip-version-check", f"transformers=={version}"], timeout=timeout)
        _run([str(_python(env)), "-c", f"import transformers, torch; assert transformers.__version__ == {version!r}"],
             timeout=300)
    except BaseException:
        shutil.rmtree(env, ignore_errors=True)  # never leave something that looks usable
        raise
    (env / STAMP).write_text(json.dumps(_wanted(version), indent=1) + "\n")  # last: the build is complete
    return _python(env)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--version", default=DEFAULT_VERSION, help="transformers version (default %(default)s)")
    ap.add_argument("--dir", type=Path, default=None, help="where (default .cache/transformers-VERSION)")
    a = ap.parse_args()
    try:
        print(ensure(a.version, a.dir))
    except BuildError as e:
        print(f"error: transformers {a.version} environment: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
