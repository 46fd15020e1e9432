"""A config as run.json held it before the config tree (schema 1): one flat dict."""

from electra_bench.run_config import SECTIONS


def schema1(config) -> dict:
    """`config.to_dict()` flattened: the top-level fields and every section's, without the derived keys."""
    d = config.to_dict()
    flat = {k: d[k] for k in ("name", "description", "source", "objective_overrides")}
    for section in SECTIONS:
        flat.update({k: v for k, v in d[section].items() if k != "generator"})
    return flat
