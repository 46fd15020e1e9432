"""The run store, at the bottom of the stages: where everything of a run lives (`layout.py`), the run
directory and its score rows (`runs.py`), per-example predictions (`predictions.py`), provenance and the
commit it came from (`provenance.py`, `commit_info.py`), and the writing primitives every stage uses:
atomic files (`atomic_io.py`), directory locks (`locking.py`), TensorBoard event files (`event_files.py`)."""
