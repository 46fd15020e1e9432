"""`python -m electra_bench.cli` (torchrun starts `-m electra_bench.cli pretrain`)."""

from . import main

main()
