"""The syntax of a reference point on the command line, LABEL=SOURCE[@FLOPS] (summarise/references.py
stores and shows them). Kept apart, with nothing heavy imported, so that a malformed --reference is refused
before pandas or torch load."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from ..errors import BenchError

_SPEC = re.compile(r"^\s*(?P<label>[^=]+?)\s*=\s*(?P<source>.+?)(?:@(?P<flops>[0-9.eE+-]+))?\s*$")


@dataclass(frozen=True)
class Reference:
    label: str
    source: str  # a checkpoint directory, a transformers folder or hf:NAME
    train_flops: float | None  # stated by the user (its convention is the user's word, not ours)


def parse(text: str) -> Reference:
    """LABEL=SOURCE[@FLOPS], e.g. 'ELECTRA-Small=hf:google/electra-small-discriminator@1.4e18'."""
    m = _SPEC.match(text)
    if not m:
        raise BenchError(f"--reference {text!r}: expected LABEL=SOURCE[@FLOPS], e.g. "
                         f"'ELECTRA-Small=hf:google/electra-small-discriminator@1.4e18'")
    flops = None
    if m.group("flops") is not None:
        try:
            flops = float(m.group("flops"))
        except ValueError:
            raise BenchError(f"--reference {text!r}: {m.group('flops')!r} is not a number of FLOPs") from None
        if not flops > 0:
            raise BenchError(f"--reference {text!r}: the stated FLOPs must be positive")
    return Reference(m.group("label"), m.group("source"), flops)


def parse_all(texts: Iterable[str]) -> list[Reference]:
    refs = [parse(t) for t in texts]
    labels = [r.label for r in refs]
    if len(set(labels)) != len(labels):
        raise BenchError(f"--reference labels must differ: {', '.join(labels)}")
    return refs
