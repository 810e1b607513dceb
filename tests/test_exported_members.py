"""The public API is exactly `replay.__all__`: it cannot grow by accident (as httpx checks its own)."""

import types

import replay


def test_all_lists_exactly_the_public_names():
    public = sorted(name for name in dir(replay) if not name.startswith(("_", "@")))  # @: pytest assert rewriting
    # submodules imported by the facade or by pytest show up as attributes
    modules = {name for name in public if isinstance(getattr(replay, name), types.ModuleType)}
    assert sorted(set(public) - modules) == sorted(replay.__all__)
    assert replay.__all__ == sorted(replay.__all__)


def test_every_exported_name_resolves():
    for name in replay.__all__:
        assert getattr(replay, name) is not None, name
