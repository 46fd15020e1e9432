"""Commands on one checkpoint: finetune (score it) and export (as a transformers folder)."""

from __future__ import annotations

import click

from ..choices import ALL_OBJECTIVES, PROTOCOLS
from .common import DEVICE_HELP, POSITIVE_INT, PROTOCOL_HELP, check_data_paths, emit_json, existing, out


@click.command()
@click.argument("checkpoint")  # a checkpoints/frac-F directory, a transformers folder, or hf:NAME (local cache)
@click.option("--tasks", default=None, help="Comma-separated task names (default: all of the source).")
@click.option("--data", "source", default=None, help="GLUE directory, parquet layout, hf:glue (default: embedded suite).")
@click.option("--seeds", type=POSITIVE_INT, default=3, show_default=True, help="Evaluation seeds per task.")
@click.option("--protocol", type=click.Choice(PROTOCOLS), default="finetune", show_default=True,
              help=PROTOCOL_HELP)
@click.option("--device", default="auto", show_default=True, help=DEVICE_HELP)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (stable snake_case keys).")
def finetune(checkpoint, tasks, source, seeds, protocol, device, as_json):
    """Fine-tune (or probe) one checkpoint on every task with several seeds; median and spread.

    CHECKPOINT: a pre-training checkpoint (checkpoints/frac-F), a local transformers folder of a BERT or
    ELECTRA encoder, or hf:NAME for a model already in the local Hugging Face cache."""
    if not checkpoint.startswith("hf:"):
        existing(checkpoint, "a checkpoints/frac-F directory, a transformers folder, or hf:NAME")
    check_data_paths(None, source)
    from ..score.scoring import score_checkpoint
    from ..present.tables import checkpoint_table

    result = score_checkpoint(checkpoint, source, tasks.split(",") if tasks else None, seeds, protocol, device)
    emit_json(result) if as_json else out.print(checkpoint_table(result))


@click.command()
@click.argument("source")
@click.option("--out", "out_dir", required=True, help="The folder to write (transformers' from_pretrained reads it).")
@click.option("--objective", type=click.Choice(ALL_OBJECTIVES), default=None,
              help="With a run directory: which objective's checkpoint.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="With a run directory: which pre-training seed.")
@click.option("--fraction", type=click.FloatRange(0, 1, min_open=True), default=1.0, show_default=True,
              help="With a run directory: which budget fraction's checkpoint.")
@click.option("--overwrite", is_flag=True, help="Replace a non-empty --out.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (stable snake_case keys).")
def export(source, out_dir, objective, seed, fraction, overwrite, as_json):
    """Export a checkpoint as a transformers folder: ElectraForPreTraining (+ generator/ ElectraForMaskedLM)
    for RTD, BertForMaskedLM for MLM, with tokenizer and model card (docs/interop.md).

    SOURCE: a checkpoints/frac-F directory, or a compare run directory with --objective (and --seed,
    --fraction)."""
    existing(source, "a checkpoints/frac-F directory, or a compare run directory with --objective")
    from ..present.export import checkpoint_of_run, export as do_export

    if objective is not None:
        source = checkpoint_of_run(source, objective, seed, fraction)
    result = do_export(source, out_dir, overwrite=overwrite)
    if as_json:
        emit_json(result)
    else:
        for m in result["models"]:
            out.print(f"{m['architecture']}: {m['folder']}", highlight=False)


COMMANDS = (finetune, export)
