"""The data layer: pre-training corpora, tokenizer, token cache, packing, fine-tuning tasks.

Public entry points (imported lazily, so that e.g. the token cache can be used without importing torch):

- `prepare_pretraining(...)` -> `PretrainingData` (pretraining.py)
- `load_tasks(source, names)` -> `list[TaskData]` (task_sources.py)
- `encode_examples(tokenizer, examples, max_len)` (encoding.py)
- `inspect_path(path)` / `render_inspect(info)` (describe.py)
- `Tokenizer` (tokenizer.py), `open_corpus` (corpus.py), `load_suite` (suite.py)

See docs/data.md for the formats, the cache layout and the packing algorithm.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "prepare_pretraining": "pretraining",
    "PretrainingData": "pretraining",
    "PackedSequences": "packing",
    "Tokenizer": "tokenizer",
    "open_corpus": "corpus",
    "Corpus": "corpus",
    "build_token_cache": "token_cache",
    "TokenCache": "token_cache",
    "load_tasks": "task_sources",
    "TaskSpec": "tasks",
    "TaskData": "tasks",
    "Example": "tasks",
    "GLUE_TASKS": "glue",
    "encode_examples": "encoding",
    "inspect_path": "describe",
    "render_inspect": "describe",
    "load_suite": "suite",
    "Suite": "suite",
    "cache_root": "cache",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        module = importlib.import_module(f".{_EXPORTS[name]}", __name__)
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
