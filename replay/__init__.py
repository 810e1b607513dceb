"""judge-replay: record, replay, grade, snapshot and explain runs of the Learn groundedness judge."""
