"""Simulated model noise (`sim model --noise P --seed S`): which close calls get their runner-up verdict.

A current model thinks adaptively and no longer takes a temperature, so two conversations over the same
pages may differ on close calls. With noise on, each close call of a final answer (`policy.runner_up`)
gets its runner-up verdict with probability P, drawn from one random stream seeded with S in the order
the final answers are made. The stand-in says so in the `STAND_IN_NOTE_HEADER` of its token counts.
"""

from __future__ import annotations

import random
import threading

STAND_IN_NOTE_HEADER = "x-judge-replay-stand-in-note"
"""The header in which a stand-in says what it simulates (the stand-in's own copy of the name the product
reads: the stand-in imports none of the product's wire code)."""


class ModelNoise:
    """`sim model --noise P --seed S`: which close calls get their runner-up verdict (module docstring)."""

    def __init__(self, probability: float, seed: int = 0) -> None:
        if not 0.0 <= probability <= 1.0:
            raise ValueError(f"noise must be a probability from 0 to 1, not {probability}")
        self.probability = probability
        self.seed = seed
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self.draws = 0
        """Close calls drawn for so far."""

    @property
    def note(self) -> str:
        """What the runs recorded against this stand-in carry among their stand-in notes."""
        return f"model noise {self.probability:g}, seed {self.seed}"

    def flips(self) -> bool:
        """The next draw of the stream: whether this close call gets its runner-up verdict."""
        with self._lock:
            self.draws += 1
            return self._random.random() < self.probability
