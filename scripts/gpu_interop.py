"""Our model against transformers on a device: export a checkpoint, load it with transformers, and compare the
outputs on the same (partly padded) batch in fp32 and under bf16 autocast. CI checks the CPU/fp32 case
(tests/test_interop.py); this is the same comparison where the GPU's kernels (SDPA's flash and
memory-efficient paths, TF32, bf16) differ from the CPU's. The GPU check runs it on its parity checkpoint.

    python scripts/gpu_interop.py results/gpu_check/runs/parity-rtd-fp32/checkpoints/frac-1.0000 --device cuda

Prints one JSON object: the largest difference divided by the largest activation, per output and precision.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import torch


def compare(ckpt: str, device: str, batch: int = 8, length: int = 128) -> dict:
    from transformers import ElectraForMaskedLM, ElectraForPreTraining

    from electra_bench.data.tokenizer import Tokenizer
    from electra_bench.present.export import export
    from electra_bench.pretrain.checkpoint import load_objective, read_checkpoint_meta, run_preset
    from electra_bench.store.layout import checkpoint_tokenizer

    meta = read_checkpoint_meta(ckpt)
    if meta["objective"] != "rtd":
        raise SystemExit(f"error: {ckpt}: an RTD checkpoint is needed (discriminator and generator), got {meta['objective']}")
    tok = Tokenizer.load(checkpoint_tokenizer(ckpt, meta))
    ours = load_objective(Path(ckpt), run_preset(Path(ckpt)), tok.special).to(device).eval()
    with tempfile.TemporaryDirectory() as tmp:
        export(ckpt, Path(tmp) / "hf")
        disc = ElectraForPreTraining.from_pretrained(Path(tmp) / "hf").to(device).eval()
        gen = ElectraForMaskedLM.from_pretrained(Path(tmp) / "hf" / "generator").to(device).eval()
    g = torch.Generator().manual_seed(0)
    T = min(length, ours.discriminator.cfg.max_positions)
    ids = torch.randint(5, tok.vocab_size, (batch, T), generator=g)
    att = torch.ones_like(ids)
    for i in range(batch // 2):  # half the rows padded, by different amounts
        n = T - 8 * (i + 1)
        ids[i, n:] = tok.special.pad
        att[i, n:] = 0
    ids[:, 0] = tok.special.cls
    ids, att, seg = ids.to(device), att.to(device), torch.zeros_like(ids).to(device)
    pos = torch.arange(T, device=device)[None].expand(batch, -1)
    real = att.bool()
    out: dict = {"checkpoint": ckpt, "device": str(device), "batch": [batch, T],
                 "tf32_matmul": bool(torch.backends.cuda.matmul.allow_tf32) if torch.cuda.is_available() else None}
    for precision in ("fp32", "bf16"):
        with torch.no_grad(), torch.autocast(torch.device(device).type, dtype=torch.bfloat16, enabled=precision == "bf16"):
            h = ours.discriminator(ids, seg, att)
            o = disc(input_ids=ids, token_type_ids=seg, attention_mask=att, output_hidden_states=True)
            gl = ours.gen_head(ours.generator(ids, seg, att), pos)
            go = gen(input_ids=ids, token_type_ids=seg, attention_mask=att).logits

            def rel(a, b):  # over real tokens only: padded positions' outputs are never read
                a, b = a.float()[real], b.float()[real]
                return float((a - b).abs().max() / a.abs().max().clamp(min=1e-12))

            out[precision] = {"disc_hidden": rel(h, o.hidden_states[-1]), "disc_logits": rel(ours.disc_head(h), o.logits),
                              "gen_logits": rel(gl, go)}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint", help="an RTD checkpoints/frac-F directory")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--json", default=None, help="also write the result here")
    args = ap.parse_args(argv)
    result = compare(args.checkpoint, args.device)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
