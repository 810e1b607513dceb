"""Project settings from `[tool.judge-replay]` in the nearest pyproject.toml (CLI flags win over these)."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from replay.core.commands import Endpoints
from replay.core.prices import Price, price_table
from replay.errors import InputError, UsageError
from replay.files.inputs import read_text
from replay.files.paths import display_path
from replay.schema.manifest import endpoint_problem
from replay.secrets.registry import remember_url
from replay.secrets.excerpts import clean, excerpt


def check_endpoint(url: str, flag: str) -> str:
    """`url` as given when it is usable as an endpoint (`schema.manifest.endpoint_problem`), else a UsageError
    naming the flag (`--learn-url`...). Its credentials are remembered as secrets first, so that not even
    the message about a malformed one shows them."""
    remember_url(url)
    problem = endpoint_problem(url)
    if problem:
        raise UsageError(f"{flag}: {problem}")
    return url


SETTINGS: dict[str, str] = {
    "gold": "a path string",
    "baseline": "a path string",
    "candidates": "a list of path strings",
    "model": "a string",
    "learn-url": "a string",
    "anthropic-base-url": "a string",
    "concurrency": "a whole number of at least 1",
    "max-tokens": "a whole number of at least 1",
    "mode": "one of live, record, replay",
    "samples": "a whole number of at least 1",
    "cassettes": "a path string",
    "page-store": "a path string",
    "bakeoff-out-dir": "a path string",
    "prices": "a table",
    "gate-stability": "a number from 0 to 1",
    "check": "true or false",
    "jobs": "a whole number of at least 1",
}
"""Every setting `[tool.judge-replay]` may hold (dashes or underscores alike), and what its value must be.
A new setting is added here, so that a misspelt one is an error rather than silently ignored."""


def find_pyproject(start: Path | None = None) -> Path | None:
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.exists() and not candidate.is_dir():  # a pipe or a device: refused by its reader, not skipped
            return candidate
    return None


def _fits(kind: str, value: Any) -> bool:
    if kind.startswith("one of "):
        return isinstance(value, str) and value in kind.removeprefix("one of ").split(", ")
    if kind == "a list of path strings":
        return isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))
    if kind == "a whole number of at least 1":
        return isinstance(value, int) and not isinstance(value, bool) and value >= 1
    if kind == "true or false":
        return isinstance(value, bool)
    if kind == "a table":
        return isinstance(value, dict)
    if kind == "a number from 0 to 1":
        return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1
    return isinstance(value, str)


def _value_problem(name: str, kind: str, value: Any) -> str | None:
    """What is wrong with a value of the right kind (a path holding a NUL, an endpoint that is no
    http(s) URL: `schema.manifest.endpoint_problem`), or None."""
    if name in ("learn-url", "anthropic-base-url"):
        remember_url(value)  # its credentials are secrets: not even this message shows them
        return endpoint_problem(value)
    if kind in ("a path string", "a list of path strings"):
        if any("\x00" in v for v in ([value] if isinstance(value, str) else value)):
            return "holds a NUL character (\\x00), which no path can hold"
    return None


def _validated(path: Path, table: Any) -> dict[str, Any]:
    """The settings table with its keys in dashed form, every value checked against `SETTINGS`."""
    if not isinstance(table, dict):
        raise InputError(path, "[tool.judge-replay] must be a table")
    settings: dict[str, Any] = {}
    for key, value in table.items():
        name = key.replace("_", "-")
        if name not in SETTINGS:
            raise InputError(path, f"[tool.judge-replay] has an unknown setting {key!r}; known: {', '.join(SETTINGS)}")
        if name in settings:
            raise InputError(path, f"[tool.judge-replay] sets {name!r} twice (with a dash and an underscore)")
        if not _fits(SETTINGS[name], value):
            shown = clean(repr(value))
            shown = shown if len(shown) <= 60 else excerpt(shown, 57, mark="...")
            if name.endswith("-url"):  # may carry credentials: its type, never its text
                shown = f"a {type(value).__name__}"
            raise InputError(path, f"[tool.judge-replay] {key} must be {SETTINGS[name]}, not {shown}")
        problem = _value_problem(name, SETTINGS[name], value)
        if problem:
            raise InputError(path, f"[tool.judge-replay] {key}: {problem}")
        if name == "prices":
            try:
                price_table(value)
            except ValueError as exc:
                raise InputError(path, f"[tool.judge-replay] {exc}") from exc
        settings[name] = value
    return settings


def load_settings(start: Path | None = None) -> tuple[dict[str, Any], Path | None]:
    """(settings with dashed keys, the folder relative paths in them are resolved against). A malformed
    pyproject.toml or a setting of the wrong kind is an InputError naming the file."""
    found = find_pyproject(start)
    if found is None:
        return {}, None
    path = Path(display_path(found))
    try:
        data = tomllib.loads(read_text(path, "settings"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(path, f"not valid TOML: {exc}") from exc
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        raise InputError(path, "[tool] must be a table")
    return _validated(path, tool.get("judge-replay", {})), found.parent


def _registered(name: str) -> str:
    """The dashed name of a setting our code reads; one missing from `SETTINGS` is a bug of ours (its
    value in a pyproject.toml would be refused as unknown)."""
    dashed = name.replace("_", "-")
    if dashed not in SETTINGS:
        raise LookupError(f"setting {name!r} is read but not declared in replay.settings.SETTINGS")
    return dashed


ENVIRONMENT: dict[str, str] = {
    "mode": "JUDGE_REPLAY_MODE",
    "learn-url": "JUDGE_REPLAY_LEARN_URL",
    "anthropic-base-url": "JUDGE_REPLAY_ANTHROPIC_BASE_URL",
}
"""The settings an environment variable may also give: it wins over `[tool.judge-replay]`, a flag over it."""


def environment_setting(name: str) -> str | None:
    """The setting's environment variable (`ENVIRONMENT`), checked as the setting would be; None when unset
    or empty. A bad value is a UsageError naming the variable (an endpoint's text never shown)."""
    key = _registered(name)
    variable = ENVIRONMENT.get(key)
    value = os.environ.get(variable, "") if variable else ""
    if not variable or not value:
        return None
    if not _fits(SETTINGS[key], value):
        raise UsageError(f"{variable} must be {SETTINGS[key]}, not {value!r}")
    problem = _value_problem(key, SETTINGS[key], value)
    if problem:
        raise UsageError(f"{variable}: {problem}")
    return value


def setting(name: str, flag_value: Any, default: Any = None, start: Path | None = None) -> Any:
    """The flag's value if given, else its environment variable (`ENVIRONMENT`), else the project setting
    (validated, not resolved), else the default."""
    key = _registered(name)
    if flag_value not in (None, (), []):
        return flag_value
    from_environment = environment_setting(key)
    if from_environment is not None:
        return from_environment
    settings, _ = load_settings(start)
    return settings.get(key, default)


def given_endpoints(learn_url: str | None = None, anthropic_base_url: str | None = None) -> Endpoints:
    """The endpoints in effect for this command as the user gave them: each flag's value if given, else its
    environment variable, else the project setting; None where none says (a command printed from a run
    then carries the run's own). What printed commands carry, so that they run as printed."""
    return Endpoints(learn_url=setting("learn-url", learn_url),
                     anthropic_base_url=setting("anthropic-base-url", anthropic_base_url))


def setting_path(name: str, flag_value: str | Path | None) -> Path | None:
    """A path setting: the flag as given (relative to the working folder), else the project setting
    resolved against the folder of its pyproject.toml, else None."""
    key = _registered(name)
    if flag_value not in (None, ""):
        return Path(flag_value)
    settings, root = load_settings()
    value = settings.get(key)
    if value in (None, ""):
        return None
    return (root or Path.cwd()) / str(value)


def setting_paths(name: str, flag_values: tuple[str, ...] | list[str]) -> list[Path]:
    """A list-of-paths setting, resolved as `setting_path` does (the flags replace the setting)."""
    key = _registered(name)
    if flag_values:
        return [Path(v) for v in flag_values]
    settings, root = load_settings()
    value = settings.get(key) or []
    if isinstance(value, str):
        value = [value]
    return [(root or Path.cwd()) / str(v) for v in value]


def project_root() -> Path:
    """The folder of the nearest pyproject.toml, else the working folder."""
    found = find_pyproject()
    return found.parent if found else Path.cwd()


def project_prices(start: Path | None = None) -> dict[str, Price]:
    """The price table: the bundled one with `[tool.judge-replay.prices]` applied (checked when loaded: a
    bad entry is an InputError naming the pyproject.toml)."""
    settings, _ = load_settings(start)
    return price_table(settings.get("prices"))


GATE_STABILITY = 0.95
"""The model-noise stability a gate decision needs by default (`[tool.judge-replay] gate-stability`)."""


def gate_stability(start: Path | None = None) -> float:
    """The share of model-noise resamples in which the gate's decision must hold for it to adopt."""
    return float(setting("gate-stability", None, GATE_STABILITY, start))
