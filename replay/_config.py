"""Project settings from `[tool.judge-replay]` in the nearest pyproject.toml (CLI flags win over these)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from ._errors import InputError


def find_pyproject(start: Path | None = None) -> Path | None:
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load_settings(start: Path | None = None) -> tuple[dict[str, Any], Path | None]:
    """(settings, the folder relative paths in them are resolved against)."""
    path = find_pyproject(start)
    if path is None:
        return {}, None
    try:
        data = tomllib.loads(path.read_text("utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise InputError(path, f"cannot read settings ({exc})") from exc
    settings = data.get("tool", {}).get("judge-replay", {})
    if not isinstance(settings, dict):
        raise InputError(path, "[tool.judge-replay] must be a table")
    return settings, path.parent


def setting(name: str, flag_value: Any, default: Any = None, start: Path | None = None) -> Any:
    """The flag's value if given, else the project setting (paths resolved), else the default."""
    if flag_value not in (None, (), []):
        return flag_value
    settings, root = load_settings(start)
    value = settings.get(name.replace("_", "-"), settings.get(name, default))
    return value


def setting_path(name: str, flag_value: str | Path | None) -> Path | None:
    """A path setting: the flag as given (relative to the working folder), else the project setting
    resolved against the folder of its pyproject.toml, else None."""
    if flag_value not in (None, ""):
        return Path(flag_value)
    settings, root = load_settings()
    value = settings.get(name.replace("_", "-"), settings.get(name))
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise InputError(find_pyproject() or "pyproject.toml", f"[tool.judge-replay] {name} must be a path string")
    return (root or Path.cwd()) / value


def setting_paths(name: str, flag_values: tuple[str, ...] | list[str]) -> list[Path]:
    """A list-of-paths setting, resolved as `setting_path` does (the flags replace the setting)."""
    if flag_values:
        return [Path(v) for v in flag_values]
    settings, root = load_settings()
    value = settings.get(name.replace("_", "-"), settings.get(name)) or []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(find_pyproject() or "pyproject.toml", f"[tool.judge-replay] {name} must be a list of paths")
    return [(root or Path.cwd()) / v for v in value]


def project_root() -> Path:
    """The folder of the nearest pyproject.toml, else the working folder."""
    found = find_pyproject()
    return found.parent if found else Path.cwd()
