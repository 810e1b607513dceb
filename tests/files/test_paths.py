"""`files.paths.resolved` and `portable_path`: what `Path.resolve()` gives, with each folder resolved once per process."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from replay.files.paths import portable_path, resolved


def test_resolved_equals_path_resolve_for_every_shape(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "real" / "sub").mkdir(parents=True)
    (tmp_path / "real" / "sub" / "f.yaml").write_text("x")
    (tmp_path / "linked").symlink_to(tmp_path / "real")
    (tmp_path / "real" / "sub" / "alias.yaml").symlink_to(tmp_path / "real" / "sub" / "f.yaml")
    monkeypatch.chdir(tmp_path)
    shapes = ["real/sub/f.yaml", "linked/sub/f.yaml", "real/sub/alias.yaml", "linked/sub/../sub/f.yaml", "f.yaml",
              ".", "", "real/sub/missing.yaml", str(tmp_path / "linked" / "sub" / "f.yaml"), "linked/../real/sub/f.yaml"]
    for shape in shapes:
        assert resolved(Path(shape)) == Path(shape).resolve(), shape


def test_a_relative_path_is_resolved_against_the_folder_current_now(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same relative folder name under two working folders: each resolved where it is (the folder
    cache is keyed by the absolute folder, not the name as given)."""
    for name in ("a", "b"):
        (tmp_path / name / "run").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "a")
    assert resolved(Path("run/x.yaml")) == tmp_path.resolve() / "a" / "run" / "x.yaml"
    monkeypatch.chdir(tmp_path / "b")
    assert resolved(Path("run/x.yaml")) == tmp_path.resolve() / "b" / "run" / "x.yaml"
    assert portable_path("run/x.yaml") == "run/x.yaml"
    assert portable_path(tmp_path / "a" / "run" / "x.yaml") == (tmp_path / "a" / "run" / "x.yaml").as_posix()
    os.chdir(tmp_path)
    assert portable_path(tmp_path / "a" / "run" / "x.yaml") == "a/run/x.yaml"
