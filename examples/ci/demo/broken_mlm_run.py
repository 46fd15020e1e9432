"""A deliberately broken objective for the README's CI history demo: `compare --quick` with the masked-LM
loss on shuffled labels (as tests/test_learning_gate.py does). That loss is MLM's and RTD's generator's, so
both can learn token frequencies and nothing else, and the regression check must fail. One process
(--jobs 1, so the patch reaches the training; slower than compare's two workers).

    python examples/ci/demo/broken_mlm_run.py RESULTS_DIR     # writes RESULTS_DIR/broken-mlm
"""

import sys

import torch

from electra_bench import objectives
from electra_bench.experiments.compare import CompareSpec, run_compare

original = objectives._weighted_mlm


def shuffled(logits, labels, weights):
    perm = torch.randperm(labels.numel(), generator=torch.Generator().manual_seed(0))
    return original(logits, labels.flatten()[perm].view_as(labels), weights)


if __name__ == "__main__":
    objectives._weighted_mlm = shuffled
    spec = CompareSpec.resolve(preset=None, budget=None, quick=True, convention="measured", corpus=None, source=None,
                               tasks=None, seeds=None, protocol=None, device="cpu", jobs=1, threads=2)
    run_compare(spec, sys.argv[1], "broken-mlm", quiet=True)
    print(f"{sys.argv[1]}/broken-mlm")
