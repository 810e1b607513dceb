"""Where the tests find the repository and their data, wherever a test file sits."""

from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
DATA = TESTS / "data"
