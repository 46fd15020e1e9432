"""Exports load, as a user loads them (`AutoModel`, `AutoModelForPreTraining`, `AutoModelForMaskedLM`,
`AutoTokenizer`), in the newest transformers (this environment's, 5.x) and in the oldest the project claims
(4.45.0, in a second small environment built by scripts/transformers_env.py under .cache/ and reused), and
compute what electra-bench computes: hidden states and logits within 1e-5 of the activation scale,
identical tokenizer ids on the embedded corpus.

transformers 4.x refuses a model.safetensors without the {"format": "pt"} metadata that save_pretrained
writes; this test is what keeps it written. Building the 4.45 environment needs a package index (about 20
s once); offline, that case is skipped with the reason, unless EB_REQUIRE_OLD_TRANSFORMERS is set (CI's
.ci/run sets it, so there it fails instead)."""

import importlib.util
import json
import lzma
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

pytest.importorskip("transformers")
from test_interop import CORPUS, TOL, batch, close, make_checkpoint, small_preset  # noqa: E402

from electra_bench.data.tokenizer import Tokenizer  # noqa: E402
from electra_bench.interop import hf_names  # noqa: E402
from electra_bench.present.export import export  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LOADER = Path(__file__).resolve().parent / "transformers_load.py"


def env_builder():
    spec = importlib.util.spec_from_file_location("transformers_env", ROOT / "scripts" / "transformers_env.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def exports(tmp_path_factory, tokenizer):
    """An RTD export (E < H: ELECTRA with its projection, and the generator) and an MLM one (E = H: BERT),
    with what electra-bench computes on one padded batch at every position."""
    root = tmp_path_factory.mktemp("exports")
    b = batch(tokenizer, padded=True)
    inputs = {"input_ids": b["input_ids"], "token_type_ids": b["segment_ids"], "attention_mask": b["attention_mask"]}
    every = torch.arange(b["input_ids"].shape[1]).expand(b["input_ids"].shape[0], -1)
    args = (b["input_ids"], b["segment_ids"], b["attention_mask"])
    ckpt, rtd = make_checkpoint(root / "rtd-run", "rtd", small_preset(tokenizer, 32), tokenizer)
    export(ckpt, root / "rtd")
    ckpt, mlm = make_checkpoint(root / "mlm-run", "mlm", small_preset(tokenizer, 64), tokenizer, seed=1)
    export(ckpt, root / "mlm")
    with torch.no_grad():
        disc, gen, enc = rtd.discriminator(*args), rtd.generator(*args), mlm.encoder(*args)
        ours = [("rtd", "pretraining", disc, rtd.disc_head(disc)),
                ("rtd/generator", "masked_lm", gen, rtd.gen_head(gen, every)),
                ("mlm", "masked_lm", enc, mlm.head(enc, every))]
    save_file({k: v.contiguous() for k, v in inputs.items()}, str(root / "inputs.safetensors"))
    return root, ours


@pytest.fixture(scope="module")
def tokenizer():
    with lzma.open(CORPUS, "rt", encoding="utf-8") as f:
        lines = [next(f) for _ in range(3000)]
    return Tokenizer.train(lines, 600)


def old_transformers_python() -> Path:
    builder = env_builder()
    try:
        return builder.ensure(hf_names.OLDEST_TRANSFORMERS)
    except builder.BuildError as e:
        if os.environ.get("EB_REQUIRE_OLD_TRANSFORMERS"):
            pytest.fail(f"transformers {hf_names.OLDEST_TRANSFORMERS} environment: {e}")
        pytest.skip(f"transformers {hf_names.OLDEST_TRANSFORMERS} environment could not be built here ({e}); "
                    f"CI (EB_REQUIRE_OLD_TRANSFORMERS=1) requires it")


def test_the_export_carries_what_transformers_4_needs(exports):
    root, _ = exports
    for folder in (root / "rtd", root / "rtd" / "generator", root / "mlm"):
        with safe_open(str(folder / "model.safetensors"), "pt") as f:
            assert f.metadata() == {"format": "pt"}
        config = json.loads((folder / "config.json").read_text())
        assert config["transformers_version"] == hf_names.OLDEST_TRANSFORMERS


def test_the_builder_pins_the_oldest_version_the_package_names():
    assert env_builder().DEFAULT_VERSION == hf_names.OLDEST_TRANSFORMERS


@pytest.mark.slow
@pytest.mark.parametrize("which", ["newest", "oldest"])
def test_transformers_loads_the_export_and_computes_what_we_do(exports, tokenizer, tmp_path, which):
    root, ours = exports
    python = Path(sys.executable) if which == "newest" else old_transformers_python()
    with lzma.open(CORPUS, "rt", encoding="utf-8") as f:
        lines = [next(f).rstrip("\n") for _ in range(1000)]
    request = {"inputs": str(root / "inputs.safetensors"), "lines": lines, "out": str(tmp_path / "theirs"),
               "models": [{"folder": str(root / sub), "heads": heads} for sub, heads, *_ in ours]}
    (tmp_path / "request.json").write_text(json.dumps(request))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # nothing of electra-bench in there
    r = subprocess.run([str(python), str(LOADER), str(tmp_path / "request.json")], capture_output=True, text=True,
                       timeout=600, env={**env, "HF_HUB_OFFLINE": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    info = json.loads((tmp_path / "theirs.json").read_text())
    if which == "oldest":
        assert info["transformers"] == hf_names.OLDEST_TRANSFORMERS
    else:
        assert int(info["transformers"].split(".")[0]) >= 5
    assert info["classes"] == ["ElectraForPreTraining", "ElectraForMaskedLM", "BertForMaskedLM"]
    theirs = load_file(str(tmp_path / "theirs.safetensors"))
    differences = {}
    for i, (sub, _, hidden, logits) in enumerate(ours):
        differences[f"{sub} hidden"] = close(hidden, theirs[f"{i}.hidden"])
        differences[f"{sub} logits"] = close(logits, theirs[f"{i}.logits"])
    print(f"transformers {info['transformers']}: largest difference / activation scale: "
          + ", ".join(f"{k} {v:.2g}" for k, v in differences.items()))
    assert max(differences.values()) < TOL, differences
    special = tokenizer.special
    expected = [[special.cls] + ids + [special.sep] for ids in tokenizer.encode_batch(lines)]
    for sub, *_ in ours:
        assert info["ids"][str(root / sub)] == expected, sub
