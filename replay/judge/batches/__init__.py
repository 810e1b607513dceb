"""Message Batches: a run's model requests in rounds, journaled so an interrupted run resumes."""
