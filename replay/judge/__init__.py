"""Running the judge: one conversation per claims file, direct or in Message Batches rounds, recorded or replayed."""
