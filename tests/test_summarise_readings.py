"""The verdict per reading (summarise/readings.py, present/readings.py): RTD - MLM per reading and kind,
a reading of one kind stated for that kind, disagreements in direction by the CIs, and the report's lines."""

from electra_bench.present.readings import readings_lines
from electra_bench.summarise.readings import compare_readings, direction


def block(estimate, ci, tasks, per_kind=None, beats=None):
    diff = {"a": "rtd", "b": "mlm", "fraction": 1.0, "estimate": estimate, "ci": ci, "resolved": ci[0] > 0 or ci[1] < 0}
    if per_kind:
        diff["per_kind"] = {k: {"estimate": e, "ci": c, "resolved": c[0] > 0 or c[1] < 0} for k, (e, c) in per_kind.items()}
    early = {**diff, "fraction": 0.5, "estimate": -99.0, "ci": [-100.0, -98.0]}  # not the final checkpoint
    return {"tasks": tasks, "statistics": {"differences": [early, diff]},
            "verdict": {"beats_untrained": beats or {"mlm": {"difference": 1.0, "ci": [0.5, 1.5], "beats": True}}}}


KINDS = {"agreement": "acceptability", "rt": "sentiment", "pairs-a": "acceptability", "pairs-b": "acceptability"}


def test_a_disagreement_in_direction_is_named_per_kind():
    probe = block(-1.2, [-1.8, -0.6], ["agreement", "rt"],
                  {"acceptability": (1.7, [0.5, 2.9]), "sentiment": (-4.3, [-6.4, -2.3])})
    zeroshot = block(-4.6, [-7.2, -1.9], ["pairs-a", "pairs-b"])  # one kind: no per-kind statistics of its own
    r = compare_readings({"probe": probe, "zeroshot": zeroshot}, "probe", kinds=KINDS)
    assert r["per_reading"]["zeroshot"]["per_kind"] == {"acceptability": {"estimate": -4.6, "ci": [-7.2, -1.9],
                                                                          "resolved": True}}
    assert r["disagreements"] == [{"kind": "acceptability", "rtd_ahead": ["probe"], "mlm_ahead": ["zeroshot"]}]
    lines = readings_lines({"readings": r})
    assert "Readings disagree on acceptability: RTD ahead under the probe, MLM ahead zero-shot" in lines
    assert lines[0].startswith("Readings: the headline, crossover and verdict above are the probe")


def test_an_unresolved_reading_disagrees_with_none():
    probe = block(1.5, [0.8, 2.2], ["agreement"])
    zeroshot = block(-0.5, [-2.0, 1.0], ["pairs-a"])
    r = compare_readings({"probe": probe, "zeroshot": zeroshot}, "probe", kinds=KINDS)
    assert r["disagreements"] == [] and direction([-2.0, 1.0]) is None
    assert any(line.startswith("Readings disagree nowhere") for line in readings_lines({"readings": r}))
    assert compare_readings({"probe": probe}, "probe") is None  # one reading: nothing to compare
