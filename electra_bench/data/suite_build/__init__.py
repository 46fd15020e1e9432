"""The parts of the embedded suites' build (scripts/build_suite.py): text helpers, the sources' readers and
the derived tasks, each importable on its own so tests can build a task from a small fixture."""
