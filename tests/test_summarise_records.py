"""The typed records (summarise/records.py, and store/runs.py's score row) against the tables docs/results.md documents them with, and
their JSON round trips: a field added to one and not the other fails here."""

import re
from pathlib import Path

import pytest

from electra_bench.errors import BenchError
from electra_bench.summarise import records
from electra_bench.store import runs as results

DOC = Path(__file__).resolve().parents[1] / "docs" / "results.md"


def documented(heading: str) -> set[str]:
    """The field names in the first column of the first table under `heading`."""
    text = DOC.read_text()
    start = text.index(heading + "\n")
    names, in_table = set(), False
    for line in text[start:].splitlines()[1:]:
        if line.startswith("|"):
            in_table = True
            first = line.split("|")[1]
            names |= set(re.findall(r"`([a-z_]+)`", first))
        elif in_table:
            break
    return names - {"key", "field"}


@pytest.mark.parametrize("heading,cls", [("## scores.jsonl", results.ScoreRow), ("### Top level", records.Summary),
                                         ("### Verdict `V`", records.Verdict)])
def test_the_documented_fields_are_the_records_fields(heading, cls):
    import dataclasses

    assert documented(heading) == {f.name for f in dataclasses.fields(cls)}


def test_score_row_round_trip_and_refusals():
    row = {"objective": "rtd", "fraction": 0.5, "step": 10, "train_flops": 1e12, "convention": "measured",
           "task": "sst2", "seed": 0, "metric": "accuracy", "value": 80.0, "protocol": "probe", "pretrain_seed": 1}
    assert results.ScoreRow.from_json(row, "x").to_json() == row
    old = {k: v for k, v in row.items() if k != "pretrain_seed"}  # written before pre-training seeds existed
    assert results.ScoreRow.from_json(old, "x").pretrain_seed == 0
    with pytest.raises(BenchError, match="scores.jsonl:3: score row has unknown colour"):
        results.ScoreRow.from_json({**row, "colour": "red"}, "scores.jsonl:3")


def test_summary_and_verdict_round_trip_and_an_old_schema_is_refused(tmp_path):
    from electra_bench.store import runs as results
    from electra_bench.summarise import summary

    run = results.open_run(tmp_path, "r", {"preset": "tiny"})
    run.append_scores([dict(objective=o, fraction=f, step=s, train_flops=fl, convention="measured", task="sst2",
                            seed=e, metric="accuracy", value=v + e, protocol="probe")
                       for o, f, s, fl, v in (("init", 0, 0, 0, 50), ("mlm", 1.0, 9, 1e12, 60), ("rtd", 1.0, 9, 1e12, 62))
                       for e in (0, 1, 2)])
    s = summary.build_summary(run)
    assert records.Summary.from_json(s).to_json() == s
    assert records.Verdict.from_json(s["verdict"]).to_json() == s["verdict"]
    with pytest.raises(BenchError, match="schema_version 3, expected 4"):
        records.Summary.from_json({**s, "schema_version": 3})
    with pytest.raises(BenchError, match="unknown verdict kind 'tie'"):
        records.Verdict.from_json({**s["verdict"], "kind": "tie"})
