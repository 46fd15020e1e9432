"""The `electra-bench` entry point (and `python -m electra_bench`).

The command line's own imports (click, rich) happen here, inside a handler, so a Ctrl-C during
start-up ends with one line instead of a traceback from the middle of an import.
"""

import sys


def run() -> None:
    try:
        from .cli import main
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(130)
    main()


if __name__ == "__main__":
    run()
