"""Which tasks each protocol (a *reading* of an encoder) can score: the zero-shot reading scores
minimal-pair tasks only (a good and a bad sentence, nothing to fit), every other protocol everything else.
A suite may hold both kinds (ebs-3): each reading of a run takes the tasks it can read."""

from __future__ import annotations

from ..errors import BenchError


def reads_spec(protocol: str, spec) -> bool:
    """Whether `protocol` scores a task of this spec (a TaskSpec or SuiteTask; None: an ordinary task)."""
    return (protocol == "zeroshot") == bool(getattr(spec, "minimal_pairs", False))


def reads(protocol: str, task) -> bool:
    return reads_spec(protocol, task.spec)


def readable(protocol: str, tasks: list) -> list:
    """The tasks `protocol` scores, in their order."""
    return [t for t in tasks if reads(protocol, t)]


def check_readings(protocols: tuple[str, ...], tasks: list, named: bool) -> None:
    """Every reading has a task to score, and (`named`: the user listed the tasks) every task listed is
    scored by some reading; otherwise one line saying which."""
    for protocol in protocols:
        if not readable(protocol, tasks):
            what = "minimal-pair task (ebs-3 has them: pairs-*)" if protocol == "zeroshot" else \
                "task that is not a minimal-pair task (those are read zero-shot only: --protocol zeroshot)"
            raise BenchError(f"--protocol {protocol}: no {what} among the tasks "
                             f"({', '.join(t.spec.name for t in tasks) or 'none'})")
    if named:
        for t in tasks:
            if any(reads(p, t) for p in protocols):
                continue
            if getattr(t.spec, "minimal_pairs", False):
                raise BenchError(f"task {t.spec.name}: a minimal-pair task, which only the zero-shot reading scores "
                                 f"(--protocol {','.join(protocols)},zeroshot)")
            raise BenchError(f"task {t.spec.name}: not a minimal-pair task, which the zero-shot reading cannot score "
                             f"(add a protocol that fits, e.g. --protocol probe,zeroshot)")
