"""Canceling a batch the run submitted but its journal could not keep (a full disk): no `--resume` would find it."""

from __future__ import annotations

import anthropic

_CANCEL_SECONDS = 30.0
"""How long canceling a batch the journal could not keep may take in all (the cancel, then reading the
batch back when the cancel was refused; no retries: the run is stopping)."""


def cancel_unkept(client: anthropic.Anthropic, batch_id: str) -> str:
    """Cancel a batch submitted that the journal could not keep: no `--resume` could find it, so it
    would be paid for unused (requests it already ran are billed anyway). What became of it, in words.
    The run is stopping: no retries, and at most `_CANCEL_SECONDS` in all (a server that did not
    answer the cancel is not asked again)."""
    client = client.with_options(timeout=_CANCEL_SECONDS / 2, max_retries=0)
    failed = ""
    batch: anthropic.types.messages.MessageBatch | None = None
    try:
        batch = client.messages.batches.cancel(batch_id)
    except Exception as cancel:  # an API error, or anything else: the batch must still be named
        if isinstance(cancel, anthropic.APIStatusError):
            failed = cancel.api_message or cancel.message
            try:  # it answered: ask what the batch is (ended already?)
                batch = client.messages.batches.retrieve(batch_id)
            except Exception:
                batch = None
        else:
            failed = "no answer in time" if isinstance(cancel, anthropic.APITimeoutError) else str(cancel)
    if batch is not None and batch.cancel_initiated_at is not None:
        return "so its cancellation was asked for (requests already running may still finish, and are billed)"
    if batch is not None and batch.processing_status == "ended":
        return "and it had already ended (its requests are billed)"
    status = f"it is {batch.processing_status}" if batch is not None else "its state is unknown"
    return f"and canceling it failed ({failed or status}): cancel it in the Claude Console"
