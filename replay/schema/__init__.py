"""Every record judge-replay reads or writes, defined once (pydantic); the JSON Schemas come from here."""
