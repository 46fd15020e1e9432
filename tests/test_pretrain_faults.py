"""Fault injection (issue: reliability). Every class of failure gets a real fault (kill -9, a cut
file, a full disk, a second writer, bad values) and an exact outcome: the exit code, one `error:` or
`warning:` line, no traceback, nothing left behind, and a run that is usable end to end afterwards
(`finetune` on its checkpoints works). docs/failure-model.md describes what is guaranteed."""

import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from electra_bench.store import atomic_io
from electra_bench.cli import main
from electra_bench.store.layout import PretrainLayout

# a micro pre-training run through the CLI: ~10 steps of `tiny` at length 32 on a tiny corpus
MICRO = ["--preset", "tiny", "--seq-len", "32", "--batch-size", "8", "--vocab-size", "300", "--quiet"]


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def cli_proc(*args, **kw):
    return subprocess.run([sys.executable, "-m", "electra_bench", *map(str, args)], capture_output=True, text=True,
                          timeout=600, **kw)


def one_line(text: str, prefix: str = "error:") -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    assert "Traceback" not in text, text
    assert len(lines) == 1 and lines[0].startswith(prefix), text
    return lines[0]


def pretrain_args(out, corpus, objective="mlm", budget="1.2e10"):
    return ["pretrain", "--objective", objective, "--budget", budget, "--corpus", corpus, "--out", out, *MICRO]


def assert_usable(out: Path):
    """The end-to-end check: every checkpoint of the run scores with `finetune`."""
    ckpts = sorted(PretrainLayout(out).checkpoints.iterdir())
    assert ckpts
    for ckpt in ckpts[-1:]:
        r = invoke("finetune", ckpt, "--tasks", "rt-polarity", "--seeds", "1", "--protocol", "probe", "--json")
        assert r.exit_code == 0, r.output
        assert json.loads(r.stdout)["results"]
    assert not list(out.rglob(".*.tmp")) and not (out / ".lock").exists()


# ---- 1. a run that says it finished must be usable --------------------------------------------------


def test_a_finished_run_with_a_cut_checkpoint_or_lost_tokenizer_is_repaired(tmp_path, corpus):
    out = tmp_path / "run"
    assert invoke(*pretrain_args(out, corpus)).exit_code == 0
    layout = PretrainLayout(out)
    weights = {p: p.read_bytes() for p in layout.checkpoints.rglob("model.safetensors")}
    # what a kill during the tokenizer save leaves, and a checkpoint cut short after the run finished
    for f in layout.tokenizer.iterdir():
        f.unlink()
    (layout.tokenizer / ".vocab.txt.x1.tmp").write_text("partial")
    victim = next(iter(weights))
    victim.write_bytes(weights[victim][: len(weights[victim]) // 2])

    r = invoke(*pretrain_args(out, corpus))
    assert r.exit_code == 0, r.output
    assert "training this run again from the start" in one_line(r.stderr, "warning:")
    assert {p: p.read_bytes() for p in weights} == weights  # retrained bit for bit
    assert_usable(out)


# ---- 2. a torn append is repaired, in one line --------------------------------------------------------


def test_a_torn_log_line_is_dropped_and_the_resume_matches(tmp_path, corpus):
    straight, torn = tmp_path / "straight", tmp_path / "torn"
    assert invoke(*pretrain_args(straight, corpus)).exit_code == 0
    kill = textwrap.dedent(f"""
        import os, sys
        from electra_bench.pretrain import trainer
        original = trainer.TrainOptions.__init__
        def init(self, *a, **k):
            original(self, *a, **k)
            self.save_every_steps = 2
            self.after_step = (lambda step: os._exit(137) if step == 5 else None,)
        trainer.TrainOptions.__init__ = init
        sys.argv = ["electra-bench"] + {[str(a) for a in pretrain_args(torn, corpus)]!r}
        from electra_bench.__main__ import run
        run()
    """)
    assert subprocess.run([sys.executable, "-c", kill], capture_output=True, timeout=600).returncode == 137
    with open(PretrainLayout(torn).log, "a") as f:
        f.write('{"step": 6, "loss": 5.')  # a write cut by the kill
    r = invoke(*pretrain_args(torn, corpus))
    assert r.exit_code == 0, r.output
    assert "dropped a torn last line" in one_line(r.stderr, "warning:")
    strip = lambda p: [{k: v for k, v in row.items() if k not in ("tokens_per_s", "mfu")}
                       for row in atomic_io.read_jsonl(PretrainLayout(p).log)]
    assert strip(torn) == strip(straight)
    assert_usable(torn)


# ---- 3. a kill in the middle of writing a checkpoint leaves nothing behind after the resume ---------


def test_kill_mid_checkpoint_write_then_resume(tmp_path, corpus):
    out = tmp_path / "run"
    kill = textwrap.dedent(f"""
        import os, sys
        from electra_bench.pretrain import checkpoint
        real = checkpoint.save_file
        def half_then_die(tensors, path):
            real(tensors, path)
            data = open(path, "rb").read()
            open(path, "wb").write(data[: len(data) // 2])
            os._exit(137)  # killed mid-write: a partial temp file stays
        checkpoint.save_file = half_then_die
        sys.argv = ["electra-bench"] + {[str(a) for a in pretrain_args(out, corpus)]!r}
        from electra_bench.__main__ import run
        run()
    """)
    assert subprocess.run([sys.executable, "-c", kill], capture_output=True, timeout=600).returncode == 137
    assert list(out.rglob(".*.tmp"))  # the orphan the kill left
    r = invoke(*pretrain_args(out, corpus))
    assert r.exit_code == 0, r.output
    assert_usable(out)


# ---- 4. one error line, never a traceback ----------------------------------------------------------


def test_a_file_where_a_directory_is_expected(tmp_path, corpus):
    f = tmp_path / "file"
    f.write_text("x")
    for args in (pretrain_args(f, corpus), ["compare", "--quick", "--results", f, "--tasks", "rt-polarity"],
                 ["history", tmp_path, "--out", f / "sub"], ["baseline", tmp_path, "--out", f / "b.json"]):
        r = invoke(*args)
        assert r.exit_code == 2, (args, r.output)
        one_line(r.stderr)
    assert f.read_text() == "x"


def test_a_full_disk_is_one_line_and_leaves_no_temp_file(tmp_path, corpus, monkeypatch):
    real = atomic_io.atomic_path.__wrapped__ if hasattr(atomic_io.atomic_path, "__wrapped__") else None
    calls = {"n": 0}
    original_replace = os.replace

    def replace_enospc(src, dst, *a, **k):  # the disk fills while a checkpoint is being written
        calls["n"] += 1
        if str(dst).endswith("model.safetensors"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dst))
        return original_replace(src, dst, *a, **k)

    monkeypatch.setattr(atomic_io.os, "replace", replace_enospc)
    out = tmp_path / "run"
    r = invoke(*pretrain_args(out, corpus))
    assert r.exit_code == 2
    line = one_line(r.stderr)
    assert "No space left on device" in line and "model.safetensors" in line
    assert not list(out.rglob(".*.tmp")) and not (out / ".lock").exists()
    monkeypatch.setattr(atomic_io.os, "replace", original_replace)
    assert invoke(*pretrain_args(out, corpus)).exit_code == 0  # space again: the same command finishes
    assert_usable(out)
    del real


def test_corrupt_checkpoints_are_one_line(tmp_path, corpus):
    out = tmp_path / "run"
    assert invoke(*pretrain_args(out, corpus)).exit_code == 0
    ckpt = PretrainLayout(out).checkpoint(1.0)
    meta = json.loads((ckpt / "checkpoint.json").read_text())
    cases = {
        "cut weights": lambda: (ckpt / "model.safetensors").write_bytes((ckpt / "model.safetensors").read_bytes()[:100]),
        "not safetensors": lambda: (ckpt / "model.safetensors").write_bytes(b"PK\x03\x04 a zip file"),
        "no encoder key": lambda: (ckpt / "checkpoint.json").write_text(json.dumps({"objective": "mlm"})),
        "foreign encoder": lambda: (ckpt / "checkpoint.json").write_text(json.dumps({**meta, "encoder": {"width": 3}})),
    }
    for name, damage in cases.items():
        damage()
        r = invoke("finetune", ckpt, "--tasks", "rt-polarity", "--seeds", "1", "--protocol", "probe")
        assert r.exit_code == 2, (name, r.output)
        assert str(ckpt) in one_line(r.stderr), name


@pytest.mark.parametrize("args, needle", [
    (["compare", "--bogus"], "No such option"),
    (["pretrain", "--budget", "1e12"], "Missing option '--objective'"),
    (["finetune"], "Missing argument"),
    (["finetune", "x", "--seeds", "0"], "'--seeds'"),
    (["compare", "--quick", "--seeds", "0"], "'--seeds'"),
    (["compare", "--jobs", "0"], "'--jobs'"),
    (["pretrain", "--objective", "mlm", "--budget", "1e12", "--log-every", "0"], "'--log-every'"),
    (["check", "run", "--baseline", "b", "--tol", "-1"], "'--tol'"),
    (["compare", "--preset", "foo"], "unknown preset 'foo'"),
    (["pretrain", "--objective", "mlm", "--budget", "1e12", "--seq-len", "100000"], "lower --seq-len"),
])
def test_usage_and_value_errors_are_one_line(args, needle):
    r = invoke(*args)
    assert r.exit_code == 2, r.output
    assert needle in one_line(r.stderr)


def test_a_budget_beyond_the_papers_schedule_is_said():
    r = invoke("pretrain", "--preset", "small", "--objective", "rtd", "--budget", "150%", "--dry-run")
    assert r.exit_code == 0 and "150% of the paper's full schedule" in r.stderr


def _default_sigint() -> None:
    """In the child before exec: a test run started in the background of a non-interactive shell (nohup, `&`)
    inherits SIGINT ignored, and Python then installs no KeyboardInterrupt handler: these tests would see the
    signal ignored, not the tool's answer to it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
def test_ctrl_c_during_start_up_is_one_line(tmp_path):
    # after the interpreter's own start-up (~0.1 s idle, more under load; a Ctrl-C inside it is Python's
    # to report): while the command line, torch, then the data are being loaded
    for delay in (1.0, 2.5):
        p = subprocess.Popen([sys.executable, "-m", "electra_bench", "compare", "--quick", "--results",
                              str(tmp_path / f"r{delay}")], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                             preexec_fn=_default_sigint)
        time.sleep(delay)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=120)
        assert "Traceback" not in err, (delay, err)
        assert p.returncode in (130, -signal.SIGINT), (delay, p.returncode, err)


def _pool_workers(parent: int) -> list[int]:
    """PIDs of the spawn workers whose parent is `parent` (Linux /proc)."""
    found = []
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]) == parent \
                    and b"spawn_main" in (d / "cmdline").read_bytes():
                found.append(int(d.name))
        except (OSError, IndexError, ValueError):
            continue
    return found


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads workers from /proc")
def test_ctrl_c_while_workers_train_stops_them_at_once(tmp_path):
    # a pool's `with` exit waits for running calls: a Ctrl-C used to go unanswered until every
    # pre-training run had finished (minutes)
    p = subprocess.Popen([sys.executable, "-m", "electra_bench", "compare", "--quick", "--results", str(tmp_path)],
                         stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, preexec_fn=_default_sigint)
    workers, deadline = [], time.monotonic() + 240
    while len(workers) < 2 and time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.5)
        workers = _pool_workers(p.pid)
    assert len(workers) == 2, "the pool's two workers never started"
    time.sleep(2.0)  # past their imports, into pre-training
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert time.monotonic() - t0 < 30
    assert p.returncode == 130, err
    assert "Traceback" not in err and "interrupted: run the same command again" in err, err
    time.sleep(1.0)
    assert all(_gone(w) for w in workers), "a worker outlived the interrupted run"
    assert not list(tmp_path.glob("*/.lock")), "the run's lock was left behind"


# ---- 6. bad input leaves nothing; 7. one writer per directory --------------------------------------


@pytest.mark.parametrize("args", [["--budget", "abc"], ["--quick", "--tasks", "nosuch"],
                                  ["--quick", "--data", "/nonexistent"], ["--preset", "small", "--budget", "1e3"]])
def test_bad_compare_input_creates_nothing(tmp_path, args):
    r = invoke("compare", "--results", tmp_path / "results", *args)
    assert r.exit_code == 2
    one_line(r.stderr)
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())


def test_a_second_pretrain_on_one_directory_is_refused(tmp_path, corpus):
    out, started, go = tmp_path / "run", tmp_path / "started", tmp_path / "go"
    # the first writer pauses after step 2 (holding the lock) until the second one has tried
    slow = textwrap.dedent(f"""
        import pathlib, sys, time
        from electra_bench.pretrain import trainer
        original = trainer.TrainOptions.__init__
        def pause(step):
            if step == 2:
                pathlib.Path({str(started)!r}).touch()
                deadline = time.time() + 300
                while not pathlib.Path({str(go)!r}).exists() and time.time() < deadline:
                    time.sleep(0.05)
        def init(self, *a, **k):
            original(self, *a, **k)
            self.after_step = (pause,)
        trainer.TrainOptions.__init__ = init
        sys.argv = ["electra-bench"] + {[str(a) for a in pretrain_args(out, corpus)]!r}
        from electra_bench.__main__ import run
        run()
    """)
    first = subprocess.Popen([sys.executable, "-c", slow], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 300
    while not started.exists() and time.time() < deadline and first.poll() is None:
        time.sleep(0.05)
    assert started.exists()
    second = cli_proc(*pretrain_args(out, corpus))
    go.touch()
    _, err = first.communicate(timeout=600)
    assert first.returncode == 0, err
    assert second.returncode == 2 and "being written by another process" in one_line(second.stderr)
    steps = [r["step"] for r in atomic_io.read_jsonl(PretrainLayout(out).log)]
    assert steps == sorted(set(steps))  # no row written twice
    assert not (out / ".lock").exists()  # released, and removed, when the run finished
    assert_usable(out)


def test_results_keep_the_users_umask(tmp_path, corpus):
    old = os.umask(0o022)
    try:
        out = tmp_path / "run"
        assert invoke(*pretrain_args(out, corpus)).exit_code == 0
    finally:
        os.umask(old)
    modes = {p.name: p.stat().st_mode & 0o777 for p in out.rglob("*") if p.is_file()}
    assert set(modes.values()) == {atomic_io.FILE_MODE}, modes
