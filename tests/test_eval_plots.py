"""Plot files are written and valid: PNG magic bytes, SVG parses as XML."""

import xml.etree.ElementTree as ET

from electra_bench.atomic_io import append_jsonl
from electra_bench.reporting import plots, regression, results

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def make_run(tmp_path, run_id="r1"):
    rows = []
    curves = {"init": [(0, 0, 50)], "mlm": [(0.5, 5e13, 65), (1.0, 1e14, 70)], "rtd": [(0.5, 5e13, 72), (1.0, 1e14, 75)]}
    for obj, pts in curves.items():
        for frac, flops, base in pts:
            for seed in (0, 1):
                for task, off in (("sst2", 5), ("rte", -5), ("cola", -20)):
                    rows.append(dict(objective=obj, fraction=frac, step=int(frac * 100), train_flops=flops,
                                     convention="measured", task=task, seed=seed,
                                     metric="mcc" if task == "cola" else "accuracy", value=base + off + seed,
                                     protocol="finetune"))
    run = results.open_run(tmp_path, run_id, {"preset": "tiny"})
    run.append_scores(rows)
    for obj in ("mlm", "rtd"):
        for i in range(1, 20):
            diag = {"diag/mlm_gain_nats": 0.1 * i, "diag/token_cosine": 0.2, "diag/disc_auc": 0.7} if i % 5 == 0 else {}
            append_jsonl(run.layout.pretrain(obj).log, {"step": i, "flops": i * 5e12, "fraction": i / 20, "lr": 1e-3,
                                                      "loss": 8.0 / i ** 0.5, "tokens_per_s": 1.0, "elapsed_s": i,
                                                      **diag})
    return run


def assert_valid(paths):
    for p in paths:
        assert p.exists() and p.stat().st_size > 0
        if p.suffix == ".png":
            assert p.read_bytes()[:8] == PNG_MAGIC
        else:
            root = ET.parse(p).getroot()
            assert root.tag.endswith("svg")


def test_plot_run_writes_png_and_svg(tmp_path):
    run = make_run(tmp_path)
    paths = plots.plot_run(run, paper_overlay=True)
    names = sorted(p.name for p in paths)
    assert names == sorted(f"{stem}.{ext}" for stem in ("score_vs_flops", "tasks", "learning")
                           for ext in ("png", "svg"))
    assert all(p.parent == run.path / "plots" for p in paths)
    assert_valid(paths)
    svg = (run.path / "plots" / "score_vs_flops.svg").read_text()
    assert "untrained" in svg and "paper (GLUE dev, paper FLOP convention)" in svg
    assert "measured convention" in svg


def test_plot_without_pretrain_logs_or_init(tmp_path):
    run = make_run(tmp_path)
    for obj in ("mlm", "rtd"):
        run.layout.pretrain(obj).log.unlink()
    paths = plots.plot_run(results.load_run(run.path), tmp_path / "out")
    assert {p.stem for p in paths} == {"score_vs_flops", "tasks"}
    assert_valid(paths)


def test_history_plot(tmp_path):
    runs = []
    for i, stamp in enumerate(("2026-01-01T00:00:00+00:00", "2026-01-02T00:00:00+00:00")):
        run = make_run(tmp_path, f"r{i}")
        run.write_provenance({"created_utc": stamp})
        runs.append(run)
    paths = regression.history(runs, tmp_path / "hist")
    assert [p.name for p in paths] == ["history.png", "history.svg"]
    assert_valid(paths)
