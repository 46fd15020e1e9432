"""The command line as users meet it: JSON outputs and one-line errors for bad input."""

import json
import subprocess
import sys
from pathlib import Path

import pytest


def cli(*args, check=False):
    proc = subprocess.run([sys.executable, "-m", "electra_bench.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=300)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def one_line_error(proc, *needles):
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    for n in needles:
        assert n in lines[0], lines[0]


def test_signal_json_matches_the_papers_arithmetic():
    s = json.loads(cli("signal", "--json", check=True).stdout)
    assert (s["mlm_positions"], s["rtd_positions"]) == (76, 512)
    assert round(s["mlm_bits_per_position"], 1) == 14.9 and round(s["mlm_bits"]) == 1132
    assert round(s["position_ratio"], 1) == 6.7


def test_presets_json_lists_paper_shapes():
    rows = {r["name"]: r for r in json.loads(cli("presets", "--json", check=True).stdout)}
    assert {"small", "base", "large", "tiny"} <= rows.keys()
    s = rows["small"]
    assert (s["layers"], s["hidden"], s["heads"], s["ffn"], s["embedding"], s["generator_hidden"]) == (12, 256, 4, 1024, 128, 64)
    assert rows["large"]["mask_prob"] == 0.25 and rows["large"]["batch_size"] == 2048
    assert 13e6 < s["params"]["encoder"] < 14.5e6 and 105e6 < rows["base"]["params"]["encoder"] < 115e6
    assert s["flops_per_step"]["rtd"] > 0 and s["convention"] == "paper"


def test_flops_json_has_stable_keys_and_honours_overrides():
    a = json.loads(cli("flops", "--preset", "small", "--objective", "rtd", "--convention", "paper", "--json",
                       check=True).stdout)
    b = json.loads(cli("flops", "--preset", "small", "--objective", "rtd", "--convention", "paper",
                       "--generator-size", "128", "--steps", "1000", "--json", check=True).stdout)
    for k in ("flops_per_step", "train_flops", "convention", "steps"):
        assert k in a
    assert b["generator_hidden"] == 128 and b["steps"] == 1000
    assert b["flops_per_step"] > a["flops_per_step"]
    assert b["train_flops"] == pytest.approx(b["flops_per_step"] * 1000)


@pytest.mark.parametrize("args,needles", [
    (["pretrain", "--preset", "huge", "--objective", "mlm", "--budget", "1e15", "--dry-run"], ["unknown preset 'huge'"]),
    (["pretrain", "--preset", "tiny", "--objective", "mlm", "--budget", "1e3", "--dry-run"], ["smaller than one training step"]),
    (["pretrain", "--preset", "tiny", "--objective", "rtd", "--budget", "lots", "--dry-run"], ["malformed budget 'lots'"]),
    (["pretrain", "--preset", "tiny", "--objective", "rtd", "--budget", "-1e15", "--dry-run"], ["budget"]),
    (["pretrain", "--preset", "tiny", "--objective", "rtd", "--budget", "1e15", "--batch-size", "-4", "--dry-run"], ["--batch-size"]),
    (["pretrain", "--preset", "tiny", "--objective", "rtd", "--budget", "1e15", "--lr", "-1", "--dry-run"], ["--lr"]),
    (["pretrain", "--preset", "tiny", "--objective", "rtd", "--budget", "1e15", "--mask-prob", "1.5", "--dry-run"], ["--mask-prob"]),
    (["flops", "--preset", "nope"], ["unknown preset"]),
    (["signal", "--seq-len", "0"], ["--seq-len"]),
    (["finetune", "/nonexistent/ckpt"], ["/nonexistent/ckpt"]),
])
def test_bad_input_is_one_clear_line(args, needles):
    one_line_error(cli(*args), *needles)


def test_dry_run_plans_both_objectives_on_the_same_budget():
    plans = [json.loads(cli("pretrain", "--preset", "small", "--objective", o, "--budget", "25%", "--dry-run",
                            "--json", check=True).stdout)["plan"] for o in ("mlm", "rtd")]
    assert plans[0]["budget"] == plans[1]["budget"]
    for p in plans:
        assert p["planned_flops"] <= p["budget"] < p["planned_flops"] + p["flops_per_step"]
    assert plans[1]["total_steps"] == pytest.approx(250_000, rel=0.01)  # 25% of ELECTRA-Small's 1M steps


def test_every_option_says_what_it_does():
    import click

    from electra_bench.cli import main

    missing = []

    def walk(cmd, path):
        missing.extend(f"{path} {p.opts[0]}" for p in cmd.params if isinstance(p, click.Option) and not p.help)
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, f"{path} {name}")

    walk(main, "electra-bench")
    assert not missing, missing


def test_every_command_takes_json():
    import click

    from electra_bench.cli import main

    lacking = []

    def walk(cmd, path):
        subs = getattr(cmd, "commands", {})
        if not subs and not any(isinstance(p, click.Option) and "--json" in p.opts for p in cmd.params):
            lacking.append(path)
        for name, sub in subs.items():
            walk(sub, f"{path} {name}")

    walk(main, "electra-bench")
    assert not lacking, lacking


SNAKE = __import__("re").compile(r"^[a-z][a-z0-9_]*$")


def test_the_reporting_commands_json_has_snake_case_keys(tmp_path):
    from history_records import BASELINE, FIXTURE_RUN

    outputs = {
        "check": cli("check", FIXTURE_RUN, "--baseline", BASELINE, "--json"),
        "baseline": cli("baseline", FIXTURE_RUN, "--out", tmp_path / "b.json", "--json"),
        "history plot": cli("history", "plot", FIXTURE_RUN, "--out", tmp_path / "plots", "--json"),
        "history show": cli("history", "show", FIXTURE_RUN, "--baseline", BASELINE, "--json"),
        "report": cli("report", FIXTURE_RUN, "--json"),
    }
    for name, proc in outputs.items():
        assert proc.returncode == 0, (name, proc.stderr)
        data = json.loads(proc.stdout)
        keys = data.keys() if isinstance(data, dict) else [k for row in data for k in row]
        assert all(SNAKE.match(k) for k in keys), (name, [k for k in keys if not SNAKE.match(k)])
    assert json.loads(outputs["baseline"].stdout)["out"] == str(tmp_path / "b.json")
    assert all(Path(f).is_file() for f in json.loads(outputs["history plot"].stdout)["files"])


def test_help_does_not_import_torch():
    proc = subprocess.run([sys.executable, "-c", "import sys; from electra_bench.__main__ import run; "
                           "sys.argv = ['electra-bench', 'compare', '--help']\ntry:\n    run()\n"
                           "except SystemExit:\n    pass\nassert 'torch' not in sys.modules, 'torch imported'"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


# Refusals that need no model, answered before torch (or pandas) is imported: issue 33 measured 8 s from a
# cold start for `pretrain --budget 1e21`, 2.3 s of it importing torch._dynamo for a FLOP count. How fast
# they are is measured by benchmarks/bench_refusal.py; this checks what makes them fast.
_NO_MODEL_REFUSALS = [
    (["pretrain", "--objective", "mlm", "--budget", "1e21"], "--allow-long-schedule"),
    (["pretrain", "--objective", "mlm", "--budget", "1e15x"], "malformed budget"),
    (["pretrain", "--preset", "nope", "--objective", "mlm", "--budget", "1e15"], "unknown preset"),
    (["pretrain", "--objective", "mlm", "--budget", "1e12", "--checkpoints", "0.5"], "--checkpoints"),
    (["pretrain", "--objective", "mlm", "--budget", "1e12", "--corpus", "/nonexistent/c.txt"], "/nonexistent/c.txt"),
    (["pretrain", "--objective", "mlm", "--budget", "1e12", "--vocab-file", "/nonexistent/v.txt"], "/nonexistent/v.txt"),
    (["pretrain", "--objective", "rtd", "--budget", "1e30", "--allow-long-schedule"], "int64 counter"),
    (["compare", "--budget", "1e21"], "--allow-long-schedule"),
    (["compare", "--preset", "base", "--budget", "200000%", "--convention", "paper"], "--allow-long-schedule"),
    (["compare", "--preset", "small"], "--budget is required"),
    (["compare", "--quick", "--long"], "exclude each other"),
    (["compare", "--quick", "--reference", "no-label"], "LABEL=SOURCE"),
    (["compare", "--quick", "--data", "/nonexistent/glue"], "/nonexistent/glue"),
    (["ablate", "--objectives", "mlm,nope"], "objective"),
    (["sweep", "--budget", "1e21"], "--allow-long-schedule"),
    (["finetune", "/nonexistent/ckpt"], "/nonexistent/ckpt"),
    (["export", "/nonexistent/ckpt", "--out", "x"], "/nonexistent/ckpt"),
    (["report", "/nonexistent/run"], "no such run directory"),
    (["check", "/nonexistent/run", "--baseline", "b.json"], "no such run directory"),
]


@pytest.mark.parametrize("args,needle", _NO_MODEL_REFUSALS, ids=[" ".join(a[:3]) for a, _ in _NO_MODEL_REFUSALS])
def test_refusals_that_need_no_model_come_before_torch_is_imported(tmp_path, args, needle):
    code = ("import sys\nfrom electra_bench.__main__ import run\nsys.argv = ['electra-bench'] + sys.argv[1:]\n"
            "try:\n    run()\nexcept SystemExit as e:\n    code = e.code\n"
            "heavy = [m for m in ('torch', 'pandas') if m in sys.modules]\n"
            "print('imported: ' + (','.join(heavy) or 'nothing heavy'), file=sys.stderr)\nsys.exit(code)")
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    *lines, imported = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("error:") and needle in lines[0], proc.stderr
    assert imported == "imported: nothing heavy", f"{imported} before refusing {args}"
    assert list(tmp_path.iterdir()) == []  # nothing created


def test_progress_eta_ignores_time_spent_waiting_in_the_queue(monkeypatch, capsys):
    """A run that waited 300 s for a worker, then did 10% in 10 s, has about 90 s left, not an hour."""
    from electra_bench.pretrain import progress

    now = [0.0]
    monkeypatch.setattr(progress.time, "perf_counter", lambda: now[0])
    phase = progress.PhaseProgress(quiet=False, every_s=1e9)
    phase.add("gen-1", total=100.0)  # t = 0: queued
    now[0] = 300.0
    phase.update("gen-1", 0.0)  # starts
    now[0] = 310.0
    phase.update("gen-1", 10.0)  # 10% done in 10 s
    phase.print_lines()
    assert capsys.readouterr().err.strip() == "gen-1:  10%, ETA 0:01:30"


def test_emulated_bf16_is_one_line_before_any_work(monkeypatch, tmp_path, capsys):
    """On a CPU without native bf16, `pretrain --precision bf16` stops before preparing data, in one line that
    names the way out; an allowed emulated run's warning is one `warning:` line, once, though two checks
    (the memory check and the trainer) raise it."""
    import warnings

    from click.testing import CliRunner

    from electra_bench import cli as cli_module
    from electra_bench import model

    monkeypatch.setattr(model, "cpu_bf16_features", lambda: ())
    out = tmp_path / "run"
    r = CliRunner().invoke(cli_module.main, ["pretrain", "--objective", "mlm", "--budget", "1e12", "--device", "cpu",
                                             "--precision", "bf16", "--quiet", "--out", str(out)])
    assert r.exit_code == 2 and not out.exists()
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: --precision bf16") and "--allow-emulated-bf16" in lines[0]

    monkeypatch.setattr(cli_module, "_warned", set())
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = cli_module._show_warning
        for _ in range(2):
            assert model.resolve_precision("bf16", "cpu", allow_emulated_bf16=True) == "bf16"
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("warning: --precision bf16: this CPU has no native bf16")


def test_piped_output_is_never_wrapped():
    """Issue 40: piped, the report's long lines were hard-wrapped at 160 columns (`token \\ncosine`), so a
    reader's grep or a script found half a line. Not on a terminal, a line stays one line."""
    from history_records import FIXTURE_RUN

    proc = cli("report", FIXTURE_RUN, check=True)
    learning = [ln for ln in proc.stdout.splitlines() if ln.startswith("Learning (held-out pre-training diagnostics):")]
    assert len(learning) == 2 and all(ln.endswith(")") and "token cosine" in ln for ln in learning), proc.stdout
    assert max(map(len, learning)) > 160  # long enough to have been wrapped before


def test_a_directory_of_runs_given_as_a_run_names_them(tmp_path):
    """Issue 40: `report results` said "results/config.json: run config not found"."""
    from electra_bench.store.runs import open_run

    for run_id in ("compare-tiny-1", "compare-tiny-2"):
        with open_run(tmp_path, run_id, {"preset": "tiny"}):
            pass
    one_line_error(cli("report", tmp_path), f"{tmp_path}: not a run directory (it holds runs: compare-tiny-1, "
                                           f"compare-tiny-2; name one, e.g. {tmp_path / 'compare-tiny-1'})")


def test_report_plan_lines_fit_100_columns():
    """Issue 40: `report --plan` printed one line of up to 300 characters per checkpoint. Now a heading per
    run, the difference on one line and the design's plan wrapped under it."""
    from history_records import FIXTURE_RUN

    lines = cli("report", "--plan", FIXTURE_RUN, check=True).stdout.splitlines()
    assert lines[0] == "compare-tiny-quick-dcf2017d:" and max(map(len, lines)) <= 100, lines
    assert lines[1].startswith("  25% (5.0e11 FLOPs): RTD - MLM = ")
    assert any(ln.startswith("    this design (2 ") for ln in lines[2:4])  # after the difference, wrapped
    assert sum(ln.startswith("  ") and not ln.startswith("    ") for ln in lines) == 3  # one per checkpoint
    records = json.loads(cli("report", "--plan", FIXTURE_RUN, "--json", check=True).stdout)
    assert [r["fraction"] for r in records] == [0.25, 0.5, 1.0] and all(r["text"].startswith("[") for r in records)


def test_compare_help_is_grouped_and_explains_gdes():
    """Issue 40: `compare --help` was 132 lines in one list and never said what `--embedding-sharing gdes` is."""
    text = cli("compare", "--help", check=True).stdout
    lines = text.splitlines()
    assert len(lines) <= 110, len(lines)
    sections = [ln for ln in lines if ln and not ln.startswith(" ") and ln.endswith(":")]
    assert sections == ["Budget:", "What is compared and scored:", "Where it runs:", "Output:",
                        "Model and objective (default: the preset's):", "Other:"]
    budget = next(i for i, ln in enumerate(lines) if ln.startswith("  --budget TEXT "))
    assert lines.index("Budget:") < budget < lines.index("What is compared and scored:")
    flat = " ".join(text.split())
    assert "gdes (DeBERTaV3: the discriminator reads the generator's under stop-gradient" in flat
    assert "a share of the paper's full schedule for the preset, not of the default budget" in flat
    assert "[x>=1]" not in text and "--seeds N " in text  # numbers: N or X, their ranges said when refused
