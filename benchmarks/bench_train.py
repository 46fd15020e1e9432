"""Training throughput, MFU and peak memory: our MLM / RTD step vs the HuggingFace models users would run.

    python benchmarks/bench_train.py                                   # tiny and small, mlm and rtd, CPU fp32
    python benchmarks/bench_train.py --presets small --batch-size small=32 --steps 3 --repeats 3
    python benchmarks/bench_train.py --device cuda                     # bf16 autocast, fused AdamW
    python benchmarks/bench_train.py --json results.json               # also write machine-readable results
    python benchmarks/bench_train.py --device cuda --compile           # the step torch.compiled, as `pretrain --compile`

What one "step" is, for both sides: forward + backward + AdamW step + grad-norm clip, as
`electra_bench.pretrain.trainer.pretrain` does it (same optimizer settings, param groups, clip, lr set every
step, a fresh seeded generator every step, the non-finite-loss check, fused AdamW (CPU and CUDA), bf16 autocast on CUDA,
fp32 on CPU unless --precision says otherwise). Masking is drawn inside the timed step for both sides.

HuggingFace side, at identical configs (vocab, embedding size, hidden, layers, heads, FFN, max positions,
dropout 0.1, exact GELU, LayerNorm eps 1e-12), on the same batch of token ids and the same masked positions
(drawn with our `choose_positions`, so the masking rate is identical):
  * mlm: `BertForMaskedLM` (labels -100 at unmasked positions: the head runs on all B x T positions, as HF
    users run it). HF BERT has no factorised embeddings, so when embedding size != hidden size (ELECTRA-Small
    style presets) the same model is `ElectraForMaskedLM` (BERT + E->H projection + H->E->V tied head).
  * rtd: `ElectraForMaskedLM` generator + `ElectraForPreTraining` discriminator, embeddings shared
    (`generator.electra.embeddings = discriminator.electra.embeddings`, LM head re-tied), generator forward
    on the masked input with labels, gumbel-max sample at the masked positions without grad, discriminator
    forward with replaced/original labels, loss = gen loss + 50 x disc loss.
Runs alternate (ours, HF, ours, HF, ...) and the median tokens/s of `--repeats` windows is reported.

MFU = counted training FLOPs of our step (`electra_bench.flops.step_flops`, "measured" by default) / step
time / a dense-matmul peak measured at the start of this run (`trainer.measure_peak_flops`). The HF column
divides the SAME FLOP count by HF's time ("useful" MFU; HF executes more, e.g. its MLM head on every
position), so ours/HF MFU == ours/HF tokens/s.

Peak memory: one subprocess per configuration builds the model and runs a few steps. CPU: its peak RSS
(VmHWM from /proc/self/status, reported by the child itself: RUSAGE_CHILDREN's ru_maxrss is the maximum over
ALL children waited for so far, and Linux carries ru_maxrss over fork + exec, so a child would start at the
parent's RSS) minus a baseline child that imports the same libraries and builds the batch.
CUDA: torch.cuda.max_memory_allocated in that child.

CUDA, in the timing process too: `cuda_peak_bytes`, torch.cuda.max_memory_allocated from building the row's
models to the end of its timing (every implementation of the row resident: with --no-hf, ours alone), so
--no-memory still reports memory without compiling the step a second time in a subprocess.

--compile: the step's forward is compiled exactly as `pretrain --compile` compiles it
(`training.trainer.compile_forward`), the HF models with `torch.compile(model)`; the compilation happens in
the untimed warm-up steps (`first_step_s` records the first, compiling, step). Eager and compiled are
separate invocations, so they are separate rows (the JSON header and the table title say which).

If `transformers` (the `bench` extra) is missing, the HF columns are skipped with a note.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as _dt
import json
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

import torch
from torch import nn

from electra_bench import objectives, presets, special_tokens
from electra_bench.choices import OBJECTIVES
from electra_bench.errors import BenchError
from electra_bench.model import count_parameters, has_padding, resolve_precision
from electra_bench.objectives import corrupt, choose_positions
from electra_bench.pretrain.optim import lr_at, pretraining_optimizer, set_lr
from electra_bench.pretrain.step import train_step
from electra_bench.pretrain.trainer import compile_forward, compile_options, measure_peak_flops, seed_dropout, step_seed

SPECIAL = special_tokens.DEFAULT
LR_SCHEDULE_STEPS = 10_000  # lr_at() is evaluated every step, as in the trainer; its value does not matter here


# --------------------------------------------------------------------------------------------- setup


def hf_available() -> tuple[bool, str]:
    try:
        import transformers
    except ImportError as e:  # the `bench` extra is not installed
        return False, f"transformers not installed ({e}); pip install 'electra-bench[bench]' for the HF columns"
    return True, transformers.__version__


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(name)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: no CUDA device is visible to torch")
    return dev


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def packed_batch(batch: int, seq_len: int, vocab_size: int, device: torch.device) -> dict[str, torch.Tensor]:
    """One packed pre-training batch as our packer makes it: no padding, [CLS] first, [SEP] last,
    two segments. The same ids are fed to both implementations."""
    g = torch.Generator().manual_seed(1234)
    ids = torch.randint(5, max(vocab_size, 6), (batch, seq_len), generator=g)
    ids[:, 0], ids[:, -1] = SPECIAL.cls, SPECIAL.sep
    seg = torch.zeros(batch, seq_len, dtype=torch.long)
    seg[:, seq_len // 2 :] = 1
    att = torch.ones(batch, seq_len, dtype=torch.long)
    return {"input_ids": ids.to(device), "segment_ids": seg.to(device), "attention_mask": att.to(device)}


def make_optimizer(module: nn.Module, preset, device: torch.device) -> tuple[torch.optim.Optimizer, list]:
    """The trainer's own optimizer (`training.optim.pretraining_optimizer`: AdamW, no decay on LayerNorm and
    biases, shared parameters once, fused on CPU and CUDA) and the parameters it clips."""
    opt = pretraining_optimizer(module, preset.optim, device)
    return opt, [p for g in opt.param_groups for p in g["params"]]


@dataclasses.dataclass
class Runner:
    """A ready-to-time training step: step(i) runs optimizer step i and returns its loss tensor."""

    impl: str  # "ours" | "hf"
    model_name: str
    params: int
    step: Callable[[int], torch.Tensor]
    module: nn.Module


@dataclasses.dataclass
class _Loss:
    loss: torch.Tensor  # what pretrain/step.train_step reads of a forward's result


def _train_step(module, optimizer, clip_params, preset, device, bf16, loss_fn, graphs: bool = False
                ) -> Callable[[int], torch.Tensor]:
    """The trainer's loop body for step i: its lr schedule, seeds and `training.step.train_step` (the
    function the trainer calls), shared by both implementations: only `loss_fn(rng)` differs."""
    forward = lambda batch, rng: _Loss(loss_fn(rng))  # noqa: E731 (the batch is bound in loss_fn)

    bad = torch.zeros((), dtype=torch.bool, device=device)

    def step(i: int) -> torch.Tensor:
        nonlocal bad
        module.train()
        set_lr(optimizer, lr_at(i, LR_SCHEDULE_STEPS, preset.optim.lr, preset.schedule.warmup_fraction))
        seed = step_seed(0, i, 0)
        seed_dropout(seed, device)  # dropout, as the trainer seeds it
        rng = torch.Generator(device=device).manual_seed(seed)  # masking, replacements, samples
        if graphs:  # CUDA graphs (compile mode reduce-overhead): a new replay, as the trainer marks it
            torch.compiler.cudagraph_mark_step_begin()
        result = train_step(forward, optimizer, {}, rng, clip_params, preset.optim.grad_clip, device.type, bf16)
        # as the trainer: a device-side flag, read once per window (check_finite), not a host read per step
        bad = bad | ~torch.isfinite(result.loss.detach())
        return result.loss.detach()

    def check_finite() -> None:
        if bool(bad):
            raise RuntimeError("non-finite loss")

    step.check_finite = check_finite
    return step


def build_ours(preset, objective: str, batch: dict, device: torch.device, bf16: bool, compile: bool | str = False,
               mode: str | None = None) -> Runner:
    torch.manual_seed(0)
    model = objectives.build(objective, preset, SPECIAL).to(device)
    optimizer, clip_params = make_optimizer(model, preset, device)
    kwargs = _compile_kwargs(compile, mode, device)
    forward = compile_forward(model, **kwargs) if compile else model  # as `pretrain --compile`
    padded = has_padding(batch["attention_mask"].cpu())  # as the trainer: decided on the host, once per batch
    step = _train_step(model, optimizer, clip_params, preset, device, bf16,
                       lambda rng: forward(batch, rng, padded=padded).loss,
                       graphs=bool(compile) and kwargs.get("mode") == "reduce-overhead")
    name = "MaskedLM" if objective == "mlm" else "ReplacedTokenDetection"
    return Runner("ours", name, count_parameters(model), step, model)


def _hf_config(cfg, cls):
    kw = {
        "vocab_size": cfg.vocab_size, "hidden_size": cfg.hidden_size, "num_hidden_layers": cfg.num_layers,
        "num_attention_heads": cfg.num_heads, "intermediate_size": cfg.ffn_size, "hidden_act": "gelu",
        "hidden_dropout_prob": cfg.dropout, "attention_probs_dropout_prob": cfg.dropout,
        "max_position_embeddings": cfg.max_positions, "type_vocab_size": cfg.type_vocab_size,
        "layer_norm_eps": cfg.layer_norm_eps, "pad_token_id": SPECIAL.pad,
    }
    if cls == "electra":
        from transformers import ElectraConfig

        return ElectraConfig(embedding_size=cfg.embedding_size, **kw)
    from transformers import BertConfig

    assert cfg.embedding_size == cfg.hidden_size
    return BertConfig(**kw)


def build_hf(preset, objective: str, batch: dict, device: torch.device, bf16: bool, compile: bool | str = False,
             mode: str | None = None) -> Runner:
    """HF's models at the same configuration; compiled whole with torch.compile (and `mode`) when asked."""
    from transformers import BertForMaskedLM, ElectraForMaskedLM, ElectraForPreTraining

    torch.manual_seed(0)
    ids, seg, att = batch["input_ids"], batch["segment_ids"], batch["attention_mask"]
    V = preset.model.encoder.vocab_size

    def mask(rng):
        positions, weights = choose_positions(ids, att, SPECIAL, preset.objective.mask_prob, preset.max_predictions, rng)
        originals = torch.gather(ids, 1, positions)  # (B, P)
        labels = torch.full_like(ids, -100).scatter(1, positions, torch.where(weights > 0, originals, -100))
        return positions, weights, originals, labels  # labels (B, T): -100 except at the masked positions

    if objective == "mlm":
        enc = preset.model.encoder
        if enc.embedding_size == enc.hidden_size:
            model, name = BertForMaskedLM(_hf_config(enc, "bert")), "BertForMaskedLM"
        else:  # HF BERT cannot factorise its embeddings; ElectraForMaskedLM is that same BERT-MLM
            model, name = ElectraForMaskedLM(_hf_config(enc, "electra")), "ElectraForMaskedLM (E!=H)"
        model.to(device)
        container = model
        model = torch.compile(model, **_compile_kwargs(compile, mode, device)) if compile else model

        def loss_fn(rng):
            positions, weights, _, labels = mask(rng)
            corrupted = corrupt(ids, positions, weights, SPECIAL, V, 0.8, 0.1, rng)
            return model(input_ids=corrupted, attention_mask=att, token_type_ids=seg, labels=labels).loss

    else:
        disc = ElectraForPreTraining(_hf_config(preset.model.encoder, "electra"))
        gen = ElectraForMaskedLM(_hf_config(preset.model.generator, "electra"))
        gen.electra.embeddings = disc.electra.embeddings  # share the embeddings, as HF ELECTRA users do
        gen.generator_lm_head.weight = disc.electra.embeddings.word_embeddings.weight  # and keep the head tied
        container = nn.ModuleDict({"generator": gen, "discriminator": disc}).to(device)
        assert gen.generator_lm_head.weight is disc.electra.embeddings.word_embeddings.weight
        name = "ElectraForMaskedLM + ElectraForPreTraining"
        if compile:
            kw = _compile_kwargs(compile, mode, device)
            gen, disc = torch.compile(gen, **kw), torch.compile(disc, **kw)

        def loss_fn(rng):
            positions, weights, originals, labels = mask(rng)
            gen_in = corrupt(ids, positions, weights, SPECIAL, V, 0.85, 0.0, rng)
            g = gen(input_ids=gen_in, attention_mask=att, token_type_ids=seg, labels=labels)
            with torch.no_grad():  # gumbel-max sample at the masked positions, temperature 1
                logits = torch.gather(g.logits, 1, positions[..., None].expand(-1, -1, g.logits.shape[-1]))
                u = torch.rand(logits.shape, generator=rng, device=ids.device, dtype=torch.float32)
                sampled = (logits.float() - torch.log(-torch.log(u + 1e-9) + 1e-9)).argmax(-1)
                sampled = torch.where(weights > 0, sampled, originals)
                disc_in = ids.scatter(1, positions, sampled)
                disc_labels = (disc_in != ids).long()
            d = disc(input_ids=disc_in, attention_mask=att, token_type_ids=seg, labels=disc_labels)
            return g.loss + preset.objective.disc_weight * d.loss

    optimizer, clip_params = make_optimizer(container, preset, device)
    graphs = bool(compile) and _compile_kwargs(compile, mode, device).get("mode") == "reduce-overhead"
    step = _train_step(container, optimizer, clip_params, preset, device, bf16, loss_fn, graphs=graphs)
    return Runner("hf", name, count_parameters(container), step, container)


BUILDERS = {"ours": build_ours, "hf": build_hf}


def _compile_kwargs(compile, mode: str | None = None, device: torch.device | None = None) -> dict:
    """`compile` is False, True (torch.compile's default backend, inductor, as the trainer) or a backend name;
    `mode`: inductor's mode ("default", "reduce-overhead": CUDA graphs); None: the trainer's for the device
    (trainer.compile_options: CUDA graphs on CUDA). Other backends take no mode."""
    if isinstance(compile, str) and compile != "inductor":
        return {"backend": compile}
    if mode is None:
        return compile_options(device) if device is not None else {}
    return {} if mode == "default" else {"mode": mode}


# ------------------------------------------------------------------------------------------- timing


def time_window(step: Callable[[int], object], n: int, start: int, device: torch.device) -> float:
    """Seconds for steps start .. start + n - 1."""
    sync(device)
    t = time.perf_counter()
    for i in range(start, start + n):
        step(i)
    sync(device)
    return time.perf_counter() - t


def alternating_windows(steps: dict[str, Callable[[int], object]], n: int, repeats: int, start: int,
                        device: torch.device) -> tuple[dict[str, list[float]], int]:
    """`repeats` rounds of one n-step window per label, in turn (a, b, a, b, ...), so that drift (thermal,
    neighbours) hits every label alike. Returns each label's window seconds and the next step index."""
    times: dict[str, list[float]] = {label: [] for label in steps}
    for _ in range(repeats):
        for label, step in steps.items():
            times[label].append(time_window(step, n, start, device))
        start += n
    return times, start


def bench_config(preset, objective: str, impls: list[str], device, bf16: bool, args) -> dict:
    """Build each implementation, warm it up, then time alternating windows; returns raw and median figures."""
    batch = packed_batch(preset.schedule.batch_size, preset.schedule.seq_len, preset.model.encoder.vocab_size, device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    runners = [BUILDERS[impl](preset, objective, batch, device, bf16, args.compile_backend, args.compile_mode)
               for impl in impls]
    first_loss, warm_s, first_s = {}, {}, {}
    for r in runners:
        t0 = time.perf_counter()
        loss = r.step(0)
        first_loss[r.impl] = float(loss)  # a host sync: first_s is the whole first step (compilation included)
        first_s[r.impl] = time.perf_counter() - t0
        for i in range(1, args.warmup):
            r.step(i)
        warm_s[r.impl] = time_window(r.step, 1, args.warmup, device)  # one more step: the per-step estimate
    n = args.steps_for(preset.name)
    if n is None:  # auto: about --target-seconds per window for the faster implementation
        n = max(2, min(200, math.ceil(args.target_seconds / max(1e-6, min(warm_s.values())))))
    times, next_step = alternating_windows({r.impl: r.step for r in runners}, n, args.repeats, args.warmup + 1, device)
    for r in runners:
        r.step.check_finite()
    tokens = n * preset.schedule.batch_size * preset.schedule.seq_len
    out = {}
    if args.profile:  # after the timed windows, so profiling overhead never touches tokens/s
        out["profile"] = {r.impl: profile_runner(r, args.profile, next_step, device) for r in runners}
    for r in runners:
        med = statistics.median(times[r.impl])
        out[r.impl] = {
            "model": r.model_name, "params": r.params, "steps_per_window": n, "window_s": times[r.impl],
            "tokens_per_s": tokens / med, "tokens_per_s_all": [tokens / t for t in times[r.impl]],
            "step_s": med / n, "first_loss": first_loss[r.impl], "first_step_s": first_s[r.impl],
        }
        if r.impl == "hf":
            out[r.impl]["attn_implementation"] = getattr(
                getattr(r.module, "config", None) or r.module["discriminator"].config, "_attn_implementation", None
            )
    if device.type == "cuda":
        sync(device)
        out["cuda_peak_bytes"] = torch.cuda.max_memory_allocated(device)  # every runner of the row resident
    del runners, batch
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return out


# ------------------------------------------------------------------------------------------ profile

# Where a step's time goes, by kind of work: the first pattern an op name contains decides its category.
# Backward ops (autograd's "...Backward0" nodes and the aten kernels they call) fall into the category of
# the kernel they run, so e.g. matmul covers forward and backward GEMMs.
CATEGORIES = (
    ("matmul", ("addmm", "aten::mm", "aten::bmm", "baddbmm", "matmul", "linear")),
    # torch's dropout draws its masks with bernoulli_; model.dropout (eager CPU) with int64 random_
    ("dropout masks (bernoulli_, random_)", ("bernoulli", "aten::random_")),
    ("layer norm", ("layer_norm",)),
    ("gelu", ("gelu",)),
    ("loss (cross-entropy, bce)", ("cross_entropy", "log_softmax", "nll_loss", "binary_cross_entropy")),
    ("attention (sdpa)", ("scaled_dot_product", "softmax")),
    ("optimizer (adamw)", ("adam",)),
    ("grad clip", ("norm", "clip", "foreach")),
    ("embedding", ("embedding",)),
    ("elementwise (add, mul, div, copy)", ("aten::add", "aten::mul", "aten::div", "copy_", "aten::where",
                                            "aten::masked_fill", "aten::sub", "aten::neg", "aten::log")),
    ("sampling and masking (rand, topk, gather, scatter, argmax)", (
        "rand", "uniform_", "topk", "gather", "scatter", "argmax", "aten::index")),
)


def categorise(name: str) -> str:
    for cat, patterns in CATEGORIES:
        if any(p in name for p in patterns):
            return cat
    return "other"


def profile_runner(runner: Runner, steps: int, start: int, device: torch.device, top: int = 15) -> dict:
    """torch.profiler over `steps` steps of one implementation: self time per op, summed by category.
    Self time (time in the op itself, not its children) sums to the profiled time without double counting."""
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    sync(device)
    t = time.perf_counter()
    with profile(activities=acts) as prof:
        for i in range(start, start + steps):
            runner.step(i)
        sync(device)
    wall = time.perf_counter() - t
    attr = "self_device_time_total" if device.type == "cuda" else "self_cpu_time_total"
    ops = [(e.key, getattr(e, attr) / 1e6, e.count) for e in prof.key_averages()]
    total = sum(s for _, s, _ in ops) or 1.0
    cats: dict[str, float] = {}
    for name, s, _ in ops:
        cats[categorise(name)] = cats.get(categorise(name), 0.0) + s
    ops.sort(key=lambda o: -o[1])
    return {
        "steps": steps, "wall_s": wall, "profiled_self_s": total,
        "categories": sorted(([c, s / steps, s / total] for c, s in cats.items()), key=lambda c: -c[1]),
        "top_ops": [[n, s / steps, s / total, c // steps] for n, s, c in ops[:top]],
    }


def profile_tables(rows: list[dict]) -> str:
    """Markdown: per configuration, the category shares side by side, then each side's top ops."""
    out = []
    for r in rows:
        prof = r.get("profile")
        if not prof:
            continue
        impls = list(prof)
        out += ["", "", f"### profile: {r['preset']} {r['objective']} {r['batch_size']}x{r['seq_len']} "
                    f"(self time per step, {prof[impls[0]]['steps']} profiled steps)", ""]
        head = " | ".join(f"{i} ms/step | {i} share" for i in impls)
        out += [f"| category | {head} |", "|---" * (1 + 2 * len(impls)) + "|"]
        by_impl = {i: {c: (s, f) for c, s, f in prof[i]["categories"]} for i in impls}
        names = list(dict.fromkeys(c for i in impls for c, _, _ in prof[i]["categories"]))
        for c in names:
            cells = " | ".join(
                f"{1e3 * by_impl[i][c][0]:,.1f} | {100 * by_impl[i][c][1]:.1f}%" if c in by_impl[i] else "- | -"
                for i in impls)
            out.append(f"| {c} | {cells} |")
        tot = " | ".join(f"**{1e3 * prof[i]['profiled_self_s'] / prof[i]['steps']:,.1f}** | 100%" for i in impls)
        out.append(f"| total (profiled) | {tot} |")
        for i in impls:
            out += ["", f"{i}: top ops by self time", "", "| op | ms/step | share | calls/step |", "|---|---|---|---|"]
            out += [f"| `{n}` | {1e3 * s:,.1f} | {100 * f:.1f}% | {c} |" for n, s, f, c in prof[i]["top_ops"]]
    return "\n".join(out)


# ------------------------------------------------------------------------------------------- memory


def _child(spec: dict) -> None:
    """Subprocess body: build one configuration and run a few steps (or nothing: the baseline), print JSON."""
    device = torch.device(spec["device"])
    if spec.get("threads"):
        torch.set_num_threads(spec["threads"])
    preset = resolve_preset(spec["preset"], spec["batch_size"], spec["seq_len"])
    if spec.get("minimal"):
        preset = minimal_preset(preset)
    if spec["impl"] == "hf" or spec.get("import_hf"):
        import transformers  # noqa: F401  (the baseline imports what the HF child imports)
        from transformers import (  # noqa: F401
            BertForMaskedLM,
            ElectraForMaskedLM,
            ElectraForPreTraining,
        )
    if device.type == "cuda":
        torch.cuda.init()
        torch.cuda.reset_peak_memory_stats(device)
    batch = packed_batch(preset.schedule.batch_size, preset.schedule.seq_len, preset.model.encoder.vocab_size, device)
    if spec["impl"] != "baseline":
        runner = BUILDERS[spec["impl"]](preset, spec["objective"], batch, device, spec["bf16"],
                                        spec.get("compile", False))
        for i in range(spec["steps"]):
            runner.step(i)
        sync(device)
    res = {"maxrss_bytes": peak_rss_bytes()}
    if device.type == "cuda":
        res["cuda_peak_bytes"] = torch.cuda.max_memory_allocated(device)
    print("@@RESULT@@" + json.dumps(res), flush=True)


def minimal_preset(preset):
    """The same objective on a trivially small model and batch: runs the same code paths (kernels paged in,
    thread pools, allocator) so that peak RSS minus this one is what the model, its optimizer state and its
    activations take."""
    enc = dataclasses.replace(preset.model.encoder, vocab_size=64, embedding_size=8, hidden_size=8, num_layers=1,
                              num_heads=1, ffn_size=16, max_positions=16)
    return preset.with_knobs(encoder=enc, batch_size=2, seq_len=8, generator_size=8)


def peak_rss_bytes() -> int:
    """This process's peak RSS. Linux: VmHWM, the high-water mark of this process image. Not ru_maxrss: Linux
    carries it over fork + exec, so a child would start at the parent's RSS (its loaded models included)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)


def run_child(spec: dict) -> dict:
    proc = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--_child", json.dumps(spec)],
        capture_output=True, text=True, check=False,
    )
    for line in proc.stdout.splitlines():
        if line.startswith("@@RESULT@@"):
            return json.loads(line[len("@@RESULT@@") :])
    raise RuntimeError(f"memory child {spec} failed (rc {proc.returncode}):\n{proc.stderr[-3000:]}")


def measure_memory(preset, objective: str, impls: list[str], device, bf16: bool, args) -> dict:
    base = {"device": str(device), "preset": preset.name, "batch_size": preset.schedule.batch_size, "seq_len": preset.schedule.seq_len,
            "objective": objective, "bf16": bf16, "steps": args.memory_steps, "threads": args.threads,
            "compile": args.compile_backend}
    out = {}
    for impl in impls:
        r = run_child({**base, "impl": impl})
        if device.type == "cuda":
            out[impl] = {"peak_bytes": r["cuda_peak_bytes"], "how": "torch.cuda.max_memory_allocated"}
        else:
            key = (impl, preset.name)
            if key not in args.baselines:
                args.baselines[key] = run_child({**base, "impl": "baseline", "import_hf": impl == "hf"})
            b = args.baselines[key]
            w = run_child({**base, "impl": impl, "minimal": True})
            out[impl] = {"peak_bytes": r["maxrss_bytes"] - b["maxrss_bytes"], "rss_bytes": r["maxrss_bytes"],
                         "baseline_rss_bytes": b["maxrss_bytes"], "how": "peak RSS - baseline RSS (imports only)",
                         "minimal_run_rss_bytes": w["maxrss_bytes"],
                         "peak_bytes_over_minimal_run": r["maxrss_bytes"] - w["maxrss_bytes"]}
    return out


# ------------------------------------------------------------------------------------------- driver


def resolve_preset(name: str, batch_size: int | None, seq_len: int | None):
    return presets.resolve(name, presets.Overrides(batch_size=batch_size, seq_len=seq_len))


def _per_preset(values: list[str] | None, flag: str) -> dict[str | None, int]:
    """`--flag 32` (every preset) or `--flag small=32` (one preset), repeatable."""
    out: dict[str | None, int] = {}
    for v in values or []:
        for part in v.split(","):
            name, _, num = part.rpartition("=")
            try:
                out[name or None] = int(num)
            except ValueError:
                raise SystemExit(f"{flag}: expected N or PRESET=N, got {part!r}") from None
    return out


def _get(d: dict, name: str):
    return d.get(name, d.get(None))


def machine_info(device: torch.device) -> dict:
    info = {"python": platform.python_version(), "torch": torch.__version__, "threads": torch.get_num_threads(),
            "platform": platform.platform(), "cpu": platform.processor() or platform.machine(),
            "cpu_count": os.cpu_count()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
    return info


def _loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _fmt_mem(b) -> str:
    return "-" if b is None else f"{b / 2**20:,.0f} MiB"


def _fmt_rate(x) -> str:
    return "-" if x is None else f"{x:,.0f}"


def table(rows: list[dict], header: dict) -> str:
    lines = [
        (
            f"# bench_train  {header['date']}  device={header['device']}  precision={header['precision']}  "
            f"{'compiled (torch.compile, ' + str(header.get('compile_backend')) + ')' if header.get('compile') else 'eager'}  "
            f"threads={header['machine']['threads']}"
        ),
        (
            f"# {header['machine'].get('gpu') or header['machine']['cpu']}; torch {header['machine']['torch']}; "
            f"transformers {header['transformers']}"
        ),
        (
            f"# matmul peak ({header['peak_dtype']}, n={header['peak_n']}): {header['peak_flops'] / 1e9:,.1f} "
            f"GFLOP/s; FLOPs: {header['flops_convention']} convention; median of {header['repeats']} alternating "
            f"windows; load average start/end {header['loadavg_start']} / {header.get('loadavg_end')}"
        ),
        "",
        (
            "| preset | objective | batch x seq | steps/window | ours tok/s | ours MFU | HF tok/s | HF MFU "
            "| ours/HF tok/s | ours peak mem | HF peak mem | HF/ours mem | GFLOP/step | params ours / HF | HF model |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        o, h = r["ours"], r.get("hf")
        mo, mh = r.get("memory", {}).get("ours"), r.get("memory", {}).get("hf")
        if mo is None and h is None and r.get("cuda_peak_bytes") is not None:  # --no-memory --no-hf on CUDA
            mo = {"peak_bytes": r["cuda_peak_bytes"]}
        ratio = f"**{o['tokens_per_s'] / h['tokens_per_s']:.2f}x**" if h else "-"
        memr = f"{mh['peak_bytes'] / mo['peak_bytes']:.2f}x" if (mo and mh and mo["peak_bytes"] > 0) else "-"
        hf_rate = _fmt_rate(h["tokens_per_s"]) if h else "-"
        hf_mfu = f"{100 * h['mfu']:.1f}%" if h else "-"
        hf_params = f"{h['params'] / 1e6:.2f}M" if h else "-"
        lines.append(
            f"| {r['preset']} | {r['objective']} | {r['batch_size']}x{r['seq_len']} | {o['steps_per_window']} "
            f"| {_fmt_rate(o['tokens_per_s'])} | {100 * o['mfu']:.1f}% | {hf_rate} | {hf_mfu} | {ratio} "
            f"| {_fmt_mem(mo and mo['peak_bytes'])} | {_fmt_mem(mh and mh['peak_bytes'])} | {memr} "
            f"| {r['flops_per_step'] / 1e9:,.1f} | {o['params'] / 1e6:.2f}M / {hf_params} "
            f"| {h['model'] if h else '-'} |"
        )
    if header.get("note"):
        lines += ["", f"NOTE: {header['note']}"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--presets", nargs="+", default=["tiny", "small"], choices=presets.names())
    ap.add_argument("--objectives", nargs="+", default=list(OBJECTIVES), choices=OBJECTIVES)
    ap.add_argument("--device", default="cpu", help="cpu | cuda | cuda:N | auto (default cpu)")
    ap.add_argument("--precision", default="auto", choices=["auto", "fp32", "bf16"],
                    help="auto (the trainer's): bf16 autocast on CUDA, fp32 on CPU")
    ap.add_argument("--allow-emulated-bf16", action="store_true",
                    help="--precision bf16 on a CPU without native bf16 (AVX512-BF16/AMX): emulated, slow")
    ap.add_argument("--batch-size", action="append", metavar="[PRESET=]N", help="override the preset's batch size")
    ap.add_argument("--seq-len", action="append", metavar="[PRESET=]N", help="override the preset's sequence length")
    ap.add_argument("--steps", action="append", metavar="[PRESET=]N",
                    help="timed steps per window (default: auto, about --target-seconds per window)")
    ap.add_argument("--target-seconds", type=float, default=2.0)
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps before timing (default 3)")
    ap.add_argument("--repeats", type=int, default=3, help="timed windows per implementation (median reported)")
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's choice)")
    ap.add_argument("--flops-convention", default="measured", choices=["measured", "paper"])
    ap.add_argument("--peak-n", type=int, default=None, help="matmul size for the peak (default 2048 CPU, 8192 CUDA)")
    ap.add_argument("--compile", action="store_true",
                    help="torch.compile the step as `pretrain --compile` does (HF: torch.compile(model)); "
                         "compilation happens in the warm-up")
    ap.add_argument("--compile-backend", default="inductor",
                    help="torch.compile backend with --compile (default inductor, the trainer's; aot_eager: "
                         "traces forward and backward without code generation, for quick CPU smoke runs)")
    ap.add_argument("--compile-mode", default=None, choices=["default", "reduce-overhead"],
                    help="inductor's mode with --compile (default: the trainer's: reduce-overhead, i.e. CUDA graphs, "
                         "on CUDA; default on CPU)")
    ap.add_argument("--no-hf", action="store_true", help="skip the HuggingFace columns")
    ap.add_argument("--no-memory", action="store_true", help="skip the peak-memory subprocesses")
    ap.add_argument("--memory-steps", type=int, default=3, help="steps each memory subprocess runs (default 3)")
    ap.add_argument("--profile", type=int, default=0, metavar="STEPS",
                    help="also run STEPS steps of each side under torch.profiler (after the timed windows) and "
                         "print where the time goes: self time by category and the top ops")
    ap.add_argument("--json", metavar="PATH", help="write results as JSON ('-': JSON on stdout, table on stderr)")
    ap.add_argument("--_child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args._child:
        _child(json.loads(args._child))
        return 0

    from electra_bench.flops import step_flops

    if args.threads:
        torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    try:  # the trainer's rule: auto is bf16 on CUDA, fp32 on CPU; emulated CPU bf16 only when allowed
        bf16 = resolve_precision(args.precision, device, args.allow_emulated_bf16) == "bf16"
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    bs, sl, st = (_per_preset(args.batch_size, "--batch-size"), _per_preset(args.seq_len, "--seq-len"),
                  _per_preset(args.steps, "--steps"))
    args.steps_for = lambda name: _get(st, name)
    args.compile_backend = (args.compile_backend or True) if args.compile else False
    args.baselines = {}
    ok, hf_version = hf_available()
    impls = ["ours"] + (["hf"] if ok and not args.no_hf else [])
    note = None if ok else hf_version
    if args.no_hf:
        note = "HF columns skipped (--no-hf)"
    log = sys.stderr

    peak_dtype = torch.bfloat16 if bf16 else torch.float32
    peak_n = args.peak_n or (8192 if device.type == "cuda" else 2048)
    peak = measure_peak_flops(device, peak_dtype, n=peak_n)  # measured again at the end; the best is used
    header = {
        "date": _dt.datetime.now().astimezone().isoformat(timespec="seconds"), "device": str(device),
        "precision": "bf16 autocast" if bf16 else "fp32", "machine": machine_info(device),
        "transformers": hf_version if ok else "not installed", "peak_flops": peak,
        "peak_dtype": str(peak_dtype).replace("torch.", ""), "peak_n": peak_n,
        "flops_convention": args.flops_convention, "repeats": args.repeats, "warmup": args.warmup,
        "compile": args.compile, "compile_backend": args.compile_backend if args.compile else None,
        "compile_mode": (args.compile_mode or compile_options(device).get("mode", "default")) if args.compile else None,
        "fused_adamw": device.type in ("cpu", "cuda"), "note": note, "loadavg_start": _loadavg(),
    }
    print(f"matmul peak: {peak / 1e9:,.1f} GFLOP/s ({header['peak_dtype']}, n={peak_n})", file=log)
    rows = []
    for name in args.presets:
        preset = resolve_preset(name, _get(bs, name), _get(sl, name))
        for objective in args.objectives:
            t0 = time.time()
            fps = step_flops(preset, objective, args.flops_convention).flops_per_step
            res = bench_config(preset, objective, impls, device, bf16, args)
            row = {"preset": name, "objective": objective, "batch_size": preset.schedule.batch_size, "seq_len": preset.schedule.seq_len,
                   "flops_per_step": fps, **res}
            for impl in impls:
                row[impl]["mfu"] = fps / row[impl]["step_s"] / peak
                row[impl]["achieved_flops_per_s"] = fps / row[impl]["step_s"]
            if "hf" in impls:
                row["ours_over_hf_tokens_per_s"] = row["ours"]["tokens_per_s"] / row["hf"]["tokens_per_s"]
            if not args.no_memory:
                row["memory"] = measure_memory(preset, objective, impls, device, bf16, args)
            rows.append(row)
            msg = ", ".join(f"{i} {row[i]['tokens_per_s']:,.0f} tok/s" for i in impls)
            print(f"{name}/{objective} {preset.schedule.batch_size}x{preset.schedule.seq_len}: {msg} ({time.time() - t0:.0f} s)", file=log)

    peak_end = measure_peak_flops(device, peak_dtype, n=peak_n)
    header["peak_flops_start_end"] = [peak, peak_end]
    if peak_end > peak:  # a neighbour slowed the first measurement: the MFU denominator is the best seen
        header["peak_flops"] = peak_end
        for row in rows:
            for impl in impls:
                row[impl]["mfu"] = row[impl]["achieved_flops_per_s"] / peak_end
    header["loadavg_end"] = _loadavg()
    text = table(rows, header) + (profile_tables(rows) if args.profile else "")
    result = {"header": header, "results": rows}
    if args.json == "-":
        print(text, file=sys.stderr)
        json.dump(result, sys.stdout, indent=2, default=str)
        print()
    else:
        print(text)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(result, f, indent=2, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
