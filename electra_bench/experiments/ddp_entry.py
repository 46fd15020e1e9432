"""The program torchrun starts on every rank of a DDP pre-training job (work.ddp_pretrain_job):
`python -m electra_bench.experiments.ddp_entry CALL.pkl` runs the pickled (fn, *args). A rank's
BenchError is one `error:` line on stderr and exit 2, which the launching job passes on."""

from __future__ import annotations

import pickle
import sys

from ..errors import BenchError


def main(path: str) -> int:
    with open(path, "rb") as f:
        fn, *args = pickle.load(f)
    try:
        fn(*args)
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
