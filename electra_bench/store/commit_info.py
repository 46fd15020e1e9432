"""Which commit a history record belongs to: id, parent, branch and date.

Asked in this order, first answer wins, per field:
1. what the caller says (`history add --commit/--parent/--branch/--date`);
2. for the commit id: the run's provenance (the commit whose code produced the numbers; a record added
   later from another checkout must not take that checkout's HEAD);
3. the CI system's environment (GitHub Actions, GitLab CI; see CI_ENV);
4. git in the working directory: `HEAD`, `<commit>^`, the branch checked out at that commit, the commit date.
A field nobody answers is None (a shallow CI clone has no parent, a detached HEAD no branch). Imports no
torch, so `history add` starts in a second.
"""

from __future__ import annotations

import datetime as _dt
import os
import subprocess
from pathlib import Path
from typing import Mapping

# CI variables per field, in the order they are tried: a pull request's source branch before the ref
# GitHub checks out for it (refs/pull/N/merge), which names no branch anyone pushed
CI_ENV = {
    "commit": ("GITHUB_SHA", "CI_COMMIT_SHA"),
    "branch": ("GITHUB_HEAD_REF", "GITHUB_REF_NAME", "CI_COMMIT_REF_NAME"),
}


def git(args: list[str], cwd: str | Path = ".", allow_empty: bool = False) -> str | None:
    """stdout of `git args` in `cwd`, stripped; None when git is missing or fails, or (unless `allow_empty`)
    prints nothing. GIT_OPTIONAL_LOCKS=0: reading never takes the index lock a concurrent git holds."""
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10,
                             env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"})
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() if allow_empty else (out.stdout.strip() or None)


def _env(field: str, environ: Mapping[str, str]) -> str | None:
    return next((environ[k] for k in CI_ENV.get(field, ()) if environ.get(k)), None)


def resolve(*, commit: str | None = None, parent: str | None = None, branch: str | None = None,
            date: str | None = None, run_commit: str | None = None, cwd: str | Path = ".",
            environ: Mapping[str, str] | None = None) -> dict:
    """{"commit", "parent", "branch", "date"} by the order in the module docstring. `run_commit`: the
    run's provenance commit ("unknown" counts as none); `date` ISO 8601 (the commit's committer date
    from git when not given)."""
    environ = os.environ if environ is None else environ
    if run_commit in ("unknown", ""):
        run_commit = None
    commit = commit or run_commit or _env("commit", environ) or git(["rev-parse", "HEAD"], cwd)
    full = git(["rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"], cwd) if commit else None
    if full:  # the commit is in this checkout: ask git the rest (a short id becomes the full one)
        commit = full
        parent = parent or git(["rev-parse", "--verify", "--quiet", f"{commit}^"], cwd)
        date = date or git(["show", "-s", "--format=%cI", commit], cwd)
        if branch is None and git(["rev-parse", "HEAD"], cwd) == commit:
            head = git(["rev-parse", "--abbrev-ref", "HEAD"], cwd)
            branch = head if head != "HEAD" else None  # detached (CI checkouts often are)
    branch = branch or _env("branch", environ)
    return {"commit": commit or "unknown", "parent": parent, "branch": branch, "date": date}


def parse_date(text: str) -> _dt.datetime | None:
    """An ISO 8601 date or time as an aware datetime (UTC when it names no zone); None if unreadable."""
    try:
        t = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (ValueError, AttributeError, TypeError):
        return None
    return t if t.tzinfo else t.replace(tzinfo=_dt.timezone.utc)
