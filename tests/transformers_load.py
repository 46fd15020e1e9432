"""Run by tests/test_transformers4.py under a given python (this environment's transformers, or an older one
in its own environment): load exported folders as a user would, with transformers' Auto classes, and
write what they compute, so that the test compares it with electra-bench's own outputs.

    python tests/transformers_load.py REQUEST.json

REQUEST: {"inputs": a safetensors file of input_ids, token_type_ids, attention_mask; "models": [{"folder",
"heads": "pretraining" | "masked_lm"}]; "lines": text lines to tokenize; "out": where to write}. Writes
OUT.safetensors (per model i: `i.hidden` from AutoModel, `i.logits` from the head class) and OUT.json
(transformers' version, the tokenizer's ids per folder). Imports nothing of electra-bench.
"""

import json
import sys

import torch
import transformers
from safetensors.torch import load_file, save_file
from transformers import AutoModel, AutoModelForMaskedLM, AutoModelForPreTraining, AutoTokenizer

HEADS = {"pretraining": AutoModelForPreTraining, "masked_lm": AutoModelForMaskedLM}


def main(request_file: str) -> None:
    transformers.logging.set_verbosity_error()
    req = json.loads(open(request_file).read())
    inputs = load_file(req["inputs"])
    tensors, ids, classes = {}, {}, []
    with torch.no_grad():
        for i, model in enumerate(req["models"]):
            encoder = AutoModel.from_pretrained(model["folder"]).eval()
            tensors[f"{i}.hidden"] = encoder(**inputs).last_hidden_state.contiguous()
            with_head = HEADS[model["heads"]].from_pretrained(model["folder"]).eval()
            tensors[f"{i}.logits"] = with_head(**inputs).logits.contiguous()
            classes.append(type(with_head).__name__)
            tokenizer = AutoTokenizer.from_pretrained(model["folder"])
            ids[model["folder"]] = tokenizer(req["lines"])["input_ids"]
    save_file(tensors, req["out"] + ".safetensors")
    with open(req["out"] + ".json", "w") as f:
        json.dump({"transformers": transformers.__version__, "ids": ids, "classes": classes}, f)


if __name__ == "__main__":
    main(sys.argv[1])
