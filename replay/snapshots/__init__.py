"""Verdict snapshots: a syrupy extension storing a run's verdicts as one small JSON file per claims file."""
