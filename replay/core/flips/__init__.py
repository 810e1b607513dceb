"""Why a claim's verdict moved between two runs: prompt, page, evidence path or the model."""
