"""The report's last lines when a compare cannot rank RTD against MLM: how many pre-training seeds would,
from the plan (summarise/plan.py: this run's own noise, 80% power), the exact command that adds them to
this run, and last the one that adds seeds until the difference resolves (`--until-resolved`).

The command is rebuilt from the run's config.json, flag by flag, so it is the run's own command with more
seeds (tests/test_present_next_step.py parses it back through the CLI and compares the specs).
"""

from __future__ import annotations

import shlex
from typing import Any, Mapping


# knobs whose option is not named after them (cli.override_options), and the on/off flags of boolean knobs
RENAMED = {"rtd_temperature": "--temperature", "rtd_temperature_warmup": "--temperature-warmup",
           "checkpoint_fractions": "--checkpoints"}
SWITCHES = {"uniform_generator": ("--uniform-generator", "--learned-generator"),
            "untied_generator": ("--untied-generator", "--tied-generator"),
            "disallow_correct": ("--disallow-correct", "--allow-correct")}
DEFAULT_PRESET = "tiny"


def _number(x) -> str:
    """Exactly the stored value (a rounded checkpoint fraction would be another config)."""
    if isinstance(x, float):
        return str(int(x)) if x.is_integer() else repr(x)
    return str(x)


def _override_flags(knob: str, value) -> list[str]:
    if knob in SWITCHES:
        return [SWITCHES[knob][0 if value else 1]]
    flag = RENAMED.get(knob, "--" + knob.replace("_", "-"))
    if isinstance(value, (list, tuple)):
        sep = ":" if knob == "rtd_temperature_warmup" else ","
        return [flag, sep.join(_number(v) for v in value)]
    return [flag, _number(value)]


def compare_args(config: Mapping[str, Any]) -> list[str]:
    """`electra-bench compare`'s arguments that resolve to this run's config (experiments/spec.CompareSpec
    .to_dict) but for the parallelism, which is not part of it."""
    args: list[str] = []
    if config.get("quick"):
        args.append("--quick")
    if config.get("long"):
        args.append("--long")
    if config.get("preset", DEFAULT_PRESET) != DEFAULT_PRESET:
        args += ["--preset", str(config["preset"])]
    args += ["--budget", str(config["budget"])]
    if config.get("convention", "measured") != "measured":
        args += ["--convention", config["convention"]]
    if config.get("corpus"):
        args += ["--corpus", str(config["corpus"])]
    if config.get("source"):
        source = str(config["source"])
        args += ["--suite", source] if source.startswith("ebs-") else ["--data", source]
    if config.get("tasks"):
        args += ["--tasks", ",".join(config["tasks"])]
    protocols = [config.get("protocol", "probe")] + list(config.get("readings", []))
    args += ["--seeds", str(config.get("seeds", 3)), "--protocol", ",".join(protocols)]
    if config.get("threads", 1) != 1:
        args += ["--threads", str(config["threads"])]
    if config.get("objectives"):
        raise ValueError("compare_args: a compare run has the default objectives")
    for knob, value in sorted((config.get("overrides") or {}).items()):
        args += _override_flags(knob, value)
    return args


def next_step_lines(summary: Mapping[str, Any]) -> list[str]:
    """[] when the verdict ranks (or cannot be planned: one seed, a sequential run); else the sentence and
    the commands, each on a line of its own that starts with "$ " (the last: the --until-resolved one)."""
    verdict = summary.get("verdict") or {}
    config = summary.get("config") or {}
    plan = verdict.get("plan") or {}
    if verdict.get("kind") != "not_resolved" or verdict.get("sequential") or not config.get("budget") \
            or plan.get("resolvable") is None or config.get("until_resolved"):
        return []
    n, diff = int(config.get("pretrain_seeds", 1)), verdict.get("difference")
    base = ["electra-bench", "compare"] + compare_args(config)
    first = max(n, 2)
    if not plan["resolvable"]:
        return [f"Next: no number of pre-training seeds resolves RTD - MLM = {diff:+.1f} against the dev sets' "
                f"shared noise (plan from this run's noise, 80% power): a larger --budget or more tasks would; to "
                f"add seeds until it resolves anyway, or {max(8, 2 * n)} per objective:",
                "$ " + shlex.join(base + ["--until-resolved", "--pretrain-seeds", str(first),
                                          "--max-pretrain-seeds", str(max(8, 2 * n))])]
    need = int(plan["seeds_needed"])
    return [f"Next: about {need} pre-training seeds per objective would resolve RTD - MLM = {diff:+.1f} (plan from "
            f"this run's noise, 80% power): the first command adds {need - n} to this run and keeps its {n}; the "
            f"second starts a run that adds {first} at a time until RTD - MLM resolves (5% error over all looks)",
            "$ " + shlex.join(base + ["--pretrain-seeds", str(need), "--run-id", str(summary["run_id"])]),
            "$ " + shlex.join(base + ["--until-resolved", "--pretrain-seeds", str(first),
                                      "--max-pretrain-seeds", str(max(need, first + 1))])]
