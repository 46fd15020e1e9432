"""Issue 25, part 1: every `results/...` path the docs name is in the repository. README said the long
run's summary was committed in results/long-cpu/ while .gitignore kept it out: a reader following the
link found nothing. Templated paths (`results/<run-id>/`, `{json,md}`, `*`, `...`) name what a command
writes, not a committed file, and are skipped."""

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", ROOT / "results" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PATH = re.compile(r"results/[^\s`)\]\"'|,;]*")
TEMPLATE = re.compile(r"[<>*{}\[]|\.\.\.")
# results/README.md lists what is committed under results/ as bullets: "- `long-cpu/`: ..."
COMMITTED_ENTRY = re.compile(r"^- `([^`\s]+)`:", re.MULTILINE)


def _tracked() -> set[str] | None:
    """The repository's files (git ls-files), or None outside a git checkout (an sdist): then the disk."""
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return set(out.decode().split("\0")) - {""}


def _named_paths() -> list[tuple[str, str]]:
    """(doc, path) for every concrete results/... path the docs name."""
    found = []
    for doc in DOCS:
        text = doc.read_text()
        named = [m.group(0).rstrip(".:") for m in PATH.finditer(text)]
        if doc == ROOT / "results" / "README.md":
            named += ["results/" + entry for entry in COMMITTED_ENTRY.findall(text)]
        found += [(str(doc.relative_to(ROOT)), p) for p in named if not TEMPLATE.search(p)]
    return sorted(set(found))


def _exists(path: str, tracked: set[str] | None) -> bool:
    if tracked is None:
        return (ROOT / path).exists()
    prefix = path.rstrip("/")
    return prefix in tracked or any(f.startswith(prefix + "/") for f in tracked)


def test_the_docs_name_results_paths():
    named = {p for _, p in _named_paths()}
    # the scan finds what it must: a regex gone wrong would otherwise pass on nothing
    assert {"results/baselines/compare-quick.json", "results/long-cpu/", "results/tuning/trials.jsonl"} <= named
    assert not any(TEMPLATE.search(p) for p in named)


@pytest.mark.parametrize("doc,path", _named_paths())
def test_every_results_path_the_docs_name_is_in_the_repository(doc, path):
    assert _exists(path, _tracked()), f"{doc} names {path}, which is not in the repository"


def test_the_committed_long_run_holds_what_results_readme_promises():
    # results/README.md: "its config, provenance, scores, summary and the report as Markdown"
    from electra_bench.store.layout import RunLayout

    run = RunLayout("results/long-cpu")
    tracked = _tracked()
    missing = [str(p) for p in (run.config, run.provenance, run.scores, run.summary, run.report_md)
               if not _exists(str(p), tracked)]
    assert not missing, f"results/README.md promises {missing}"
