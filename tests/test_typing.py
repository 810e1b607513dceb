"""The package type-checks under `mypy --strict` (settings in pyproject.toml): types are documentation
that cannot go stale.

mypy keeps its incremental cache where `mypy` run by hand keeps it (`.mypy_cache/` in the repository,
ignored by git), so that after a change only the modules it touches are checked again: what mypy itself
does by default, and what a checkout that ran mypy before has. A fresh checkout (CI) checks everything."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_the_package_passes_mypy_strict():
    done = subprocess.run([sys.executable, "-m", "mypy"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success: no issues found" in done.stdout
