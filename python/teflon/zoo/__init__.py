"""The real-model conformance suite's pieces: model specs (spec.py), test inputs (inputs.py), each task's
post-processing (post.py), the task-level judges (judge.py), one case's run (run.py) and the checked-in list of
known failures (expectations.py). docs/zoo.md describes the rules."""
