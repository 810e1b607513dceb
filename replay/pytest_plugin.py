"""pytest plugin (entry point `pytest11`): the `verdict_snapshot` fixture."""
