"""Golden outputs: every judge-replay command on the bundled demo and the README walk-through prints,
exits and writes exactly what tests/golden/expected/ holds (stdout, stderr, exit code, files written).

A guard for refactorings: a change that is meant to change no behaviour must leave every case green.
A change that is meant to change an output: `python scripts/golden.py --update`, then review
`git diff tests/golden/expected/`. The cases are in cases.py, the runner in harness.py; `python
scripts/golden.py` runs the same check outside pytest and prints the whole diff.

Each test runs its case, in a sandbox of its own, through a fork server its worker keeps (fixture
`golden_runner`); pytest-xdist spreads the cases over the cores.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def _harness():
    name = "judge_replay_golden_harness"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, HERE / "harness.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


harness = _harness()
CASES = list(harness.cases.by_name().values())
MAX_DIFF_LINES = 150


@pytest.fixture(scope="session")
def golden_runner():
    """Runs each case when its test asks for it: a worker runs the cases of the tests it was given, no
    more (a fixture running every selected case up front ran all of them again on each worker). The
    sandboxes are where `scripts/golden.py` puts them (a short temporary path: outputs wrapped at 80
    columns name it)."""
    import shutil
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="judge-replay-golden-"))
    runner = harness.CaseRunner(root)
    yield runner
    runner.close()
    shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden_output(case, golden_runner) -> None:
    diffs = harness.differences(golden_runner.run(case))
    if diffs:
        lines = "".join(diffs).splitlines(keepends=True)
        shown = "".join(lines[:MAX_DIFF_LINES])
        more = f"... {len(lines) - MAX_DIFF_LINES} more lines\n" if len(lines) > MAX_DIFF_LINES else ""
        note = harness.environment_note()
        pytest.fail(f"{case.name} differs from tests/golden/expected/{case.expected_name}/ "
                    f"(whole diff: python scripts/golden.py -k {case.name}; if the change is meant: "
                    f"python scripts/golden.py --update):\n{shown}{more}{note}", pytrace=False)


def test_every_expected_output_has_its_case() -> None:
    assert harness.orphans(CASES) == [], "expected outputs of no case: run python scripts/golden.py --update"


def test_walkthrough_recording_is_the_bundled_demo() -> None:
    """README step 1: the cassettes and prompt.md of a recording against fresh stand-ins (no key given)
    are byte-identical to cassettes/v3-demo's. The golden case holds the recording to its expected
    files; this holds those to the bundled run, so an --update cannot drift away from it unseen."""
    recorded = harness.EXPECTED / "record-walkthrough" / "files" / "tmp" / "my-v3"
    bundled = harness.REPO / "cassettes" / "v3-demo"
    names = sorted(p.name for p in bundled.iterdir() if p.suffix == ".yaml" or p.name == "prompt.md")
    assert names, bundled
    different = [n for n in names if (recorded / n).read_bytes() != (bundled / n).read_bytes()]
    assert different == []


def test_the_readme_shows_the_bakeoff_output_byte_for_byte() -> None:
    """The README's "What the bake-off prints" block is what `judge-replay bakeoff` prints on a fresh clone
    piped at 80 columns: the golden case holds the program to its expected stdout, this holds the README
    to it (a new user compares them byte for byte)."""
    import re

    readme = (harness.REPO / "README.md").read_text("utf-8")
    section = readme.split("## What the bake-off prints", 1)[1]
    block = re.search(r"```text\n(.*?)```", section, re.S)
    assert block is not None, "README: no text block under 'What the bake-off prints'"
    assert block.group(1) == (harness.EXPECTED / "bakeoff" / "stdout").read_text("utf-8")
