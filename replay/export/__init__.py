"""Runs written as other tools' logs: Inspect AI eval logs, so that `inspect view` browses them."""
