"""TensorBoard event files for a compare run made before pre-training wrote them (or copied without them):
each pre-training log.jsonl and the run's summary.json, written by the same code a run uses now
(pretrain/tensorboard_log.py, present/tensorboard_curves.py), into a copy under OUT.

    python scripts/tensorboard_of_run.py results/longer-cpu /tmp/tb && tensorboard --logdir /tmp/tb

docs/img/tensorboard-longer-cpu.png is results/longer-cpu so written, opened in TensorBoard 2.21 and captured
with headless Chromium (Debian's chromium-headless-shell):

    tensorboard --logdir /tmp/tb --host 127.0.0.1 --port 6006 &
    chromium-headless-shell --no-sandbox --disable-gpu --disable-webgl --hide-scrollbars --window-size=1500,1050 \\
      --virtual-time-budget=40000 --screenshot=shot.png "http://127.0.0.1:6006/?darkMode=false&tagFilter=\\
    %5Escore%2Fsuite%7C%5Escore%2Fword-scramble%7Cvs_MFLOPs%2Ftrain%2Floss%24%7Cvs_MFLOPs%2Fdiag%2Fdisc_auc#timeseries"
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from electra_bench.store import atomic_io, event_files
from electra_bench.store.layout import PretrainLayout, RunLayout
from electra_bench.present import tensorboard_curves
from electra_bench.pretrain import tensorboard_log


def main(run: Path, out: Path) -> int:
    if not event_files.available():
        print("error: the tensorboard package is not installed (pip install 'electra-bench[tensorboard]')",
              file=sys.stderr)
        return 1
    dst = out / run.name
    for log in sorted(run.glob("pretrain/*/seed-*/log.jsonl")):
        layout = PretrainLayout(dst / log.parent.relative_to(run))
        layout.root.mkdir(parents=True, exist_ok=True)
        shutil.copy(log, layout.log)
        tensorboard_log.mirror(layout, atomic_io.read_jsonl(layout.log)[-1])  # the first call replays the whole log
    if (run / "summary.json").is_file():
        tensorboard_curves.write(RunLayout(dst), json.loads((run / "summary.json").read_text()))
    for p in sorted(dst.rglob("events.out.tfevents.*")):
        print(p.parent)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        sys.exit(2)
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
