"""The `judge-replay` command line: one click group, one module per command."""
