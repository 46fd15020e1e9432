"""`electra-bench ablate`: compare's machinery over Table 5's objectives (the end-to-end test is slow)."""

import json

import pytest
import torch

from electra_bench import presets
from electra_bench.choices import OBJECTIVES
from electra_bench.errors import BenchError
from electra_bench.experiments.ablate import TABLE5, render_table, resolve_spec, run_ablate
from electra_bench.experiments.compare import CompareSpec
from electra_bench.flops import step_flops
from electra_bench.layout import RunLayout

MICRO = (("batch_size", 8), ("seq_len", 32), ("vocab_size", 300))


def test_compare_run_ids_do_not_change():
    """The objectives field is left out of the identity at its default (this id is the one the code
    gave before the field existed)."""
    spec = CompareSpec(preset="tiny", budget="1.2e13", threads=1, pretrain_seeds=2, overrides=(("seq_len", 32),))
    assert spec.objectives == OBJECTIVES and "objectives" not in spec.to_dict()
    assert spec.run_id() == "compare-tiny-f8583e9b"
    other = CompareSpec(preset="tiny", budget="1.2e13", threads=1, pretrain_seeds=2, overrides=(("seq_len", 32),),
                        objectives=("rtd", "rtd-15"))
    assert other.to_dict()["objectives"] == ["rtd", "rtd-15"] and other.run_id() != spec.run_id()
    assert other.run_id("ablate").startswith("ablate-tiny-")


def test_resolve_defaults_to_table5_and_checks_names():
    common = dict(preset=None, budget=None, quick=True, convention="measured", corpus=None, source=None, tasks=None,
                  seeds=None, protocol=None, device="cpu")
    spec = resolve_spec(**common)
    assert spec.objectives == tuple(o for o, _, _ in TABLE5) and spec.pretrain_seeds == 1
    with pytest.raises(BenchError, match="unknown objective 'clm'"):
        resolve_spec(objectives=["rtd", "clm"], **common)
    with pytest.raises(BenchError, match="named twice"):
        resolve_spec(objectives=["rtd", "rtd"], **common)


def test_render_keeps_table5_layout():
    rows = [{"model": "ELECTRA", "paper_glue": 85.0, "paper_vs_bert": 2.8, "score": 61.2, "min": 60.0, "max": 62.0,
             "ours_vs_bert": 1.5, "train_flops": 1e12},
            {"model": "BERT", "paper_glue": 82.2, "paper_vs_bert": 0.0, "score": 59.7, "min": None, "max": None,
             "ours_vs_bert": 0.0, "train_flops": 1e12}]
    md = render_table(rows, "t", "md")
    assert "| ELECTRA | 85.0 | +2.8 | 61.2 | [60.0, 62.0] | +1.5 | 1e+12 |" in md
    text = render_table(rows, "t")
    assert "GLUE dev (paper, Base)" in text and "BERT" in text


def _corpus(root):
    corpus = root / "corpus.txt"
    words = "the cat sat on a mat while dogs ran past old trees near quiet rivers at dawn".split()
    rng = torch.Generator().manual_seed(0)
    lines = []
    for _ in range(60):
        for _ in range(6):
            lines.append(" ".join(words[i] for i in torch.randint(len(words), (12,), generator=rng).tolist()) + ".")
        lines.append("")
    corpus.write_text("\n".join(lines))
    return corpus


@pytest.mark.slow
def test_ablate_end_to_end_at_a_tiny_budget(tmp_path):
    p = presets.resolve("tiny", presets.Overrides(**dict(MICRO)))
    objectives = tuple(o for o, _, _ in TABLE5)
    budget = 4 * max(step_flops(p.for_objective(o), o).flops_per_step for o in objectives)
    spec = CompareSpec(preset="tiny", budget=f"{budget:.6g}", corpus=str(_corpus(tmp_path)), tasks=("rt-polarity",),
                       seeds=1, protocol="probe", pretrain_seeds=1, probe_pool=120, probe_examples=80,
                       max_eval_examples=80, threads=1, overrides=MICRO, objectives=objectives, jobs=1)
    result, rendered = run_ablate(spec, tmp_path / "results", None, quiet=True)
    run = tmp_path / "results" / spec.run_id("ablate")
    layout = RunLayout(run)
    assert json.loads(layout.ablation.read_text()) == json.loads(json.dumps(result))
    rows = {r["objective"]: r for r in result["rows"]}
    assert list(rows) == list(objectives) + ["init"]
    for o in objectives:
        assert rows[o]["score"] is not None and 0 < rows[o]["train_flops"] <= budget
        assert rows[o]["flops_per_step"]["paper"] > 0 and rows[o]["flops_per_step"]["measured"] > 0
        # only the final checkpoint is scored
        assert (layout.pretrain(o, 0).checkpoint(1.0) / "model.safetensors").is_file()
    scored = {(json.loads(line)["objective"], json.loads(line)["fraction"]) for line in layout.scores.read_text().splitlines()}
    assert scored == {(o, 1.0) for o in objectives} | {("init", 0.0)}
    assert rows["mlm"]["ours_vs_bert"] == 0 and rows["rtd"]["paper_glue"] == 85.0
    assert "All-Tokens MLM" in rendered and "ELECTRA 15%" in rendered
    assert layout.report_md.read_text().count("\n|") >= 6
    # a rerun reuses everything
    n = len(layout.scores.read_text().splitlines())
    again, _ = run_ablate(spec, tmp_path / "results", None, quiet=True)
    assert len(layout.scores.read_text().splitlines()) == n and again["rows"] == result["rows"]


def test_report_refuses_an_ablation_run_in_one_line(tmp_path):
    import subprocess
    import sys

    (tmp_path / "ablation.json").write_text("{}")
    (tmp_path / "config.json").write_text("{}")
    proc = subprocess.run([sys.executable, "-m", "electra_bench.cli", "report", str(tmp_path)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "ablation run" in proc.stderr
