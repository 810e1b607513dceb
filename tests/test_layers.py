"""The package's layer contracts (pyproject.toml, [tool.importlinter]) hold."""

import shutil
import subprocess
import sys
from pathlib import Path

from locations import REPO


def test_every_import_linter_contract_is_kept() -> None:
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert lint, "import-linter is part of the test extra"
    done = subprocess.run([lint, "--no-cache"], cwd=REPO, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout
