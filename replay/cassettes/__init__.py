"""The cassette files: vcrpy's format written deterministically, read safely, scrubbed, audited, keyed."""
