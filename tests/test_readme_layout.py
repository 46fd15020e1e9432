"""Issue 40, item 10: the README is a newcomer's path (set-up, the default run, reading its report) on its
first screenfuls, with the long results and the reference moved to docs/ and linked; every relative link
of the README and docs/ leads to a file and, with an #anchor, to one of its headings."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = [README, *sorted((ROOT / "docs").glob("*.md"))]


def _slugs(doc: Path) -> set[str]:
    """GitHub's heading anchors: lower-case, punctuation dropped, spaces to '-', repeats numbered."""
    out, seen, code = set(), {}, False
    for line in doc.read_text().splitlines():
        if line.startswith("```"):
            code = not code
        m = None if code else re.match(r"^#{1,6} (.*)", line)
        if m:
            s = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else f"{s}-{n}")
    return out


def _links():
    for doc in DOCS:
        text = re.sub(r"```.*?```", "", doc.read_text(), flags=re.S)  # a link in a code block is not one
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if not re.match(r"[a-z]+:", target):
                yield str(doc.relative_to(ROOT)), target


def test_the_newcomers_path_comes_first_and_the_readme_stays_short():
    text = README.read_text()
    lines = text.splitlines()
    first = "\n".join(lines[:130])
    for heading in ("## Set-up: two commands", "## What the default run measures", "### Reading the report"):
        assert heading in first, f"{heading!r} is not on the README's first screenfuls"
    assert "make install && make compare" in first and "make install && make test" in first
    assert len(text.encode()) < 30_000, f"README is {len(text.encode())} bytes: move long results to docs/"


def test_the_link_scan_finds_links():
    found = list(_links())
    assert ("README.md", "docs/cpu-results.md") in found and len(found) > 30


@pytest.mark.parametrize("doc,target", sorted(set(_links())))
def test_every_relative_link_leads_somewhere(doc, target):
    file, _, anchor = target.partition("#")
    dest = (ROOT / doc).parent / file if file else ROOT / doc
    assert dest.exists(), f"{doc} links {target}: no such file"
    if anchor and dest.suffix == ".md":
        assert anchor in _slugs(dest), f"{doc} links {target}: no such heading"
