"""Fixtures shared by the snapshot plugin's tests."""

from collections.abc import Iterator

import pytest
import syrupy


@pytest.fixture(autouse=True)
def _outer_syrupy_session() -> Iterator[None]:
    """Each in-process run replaces syrupy's module-level session; give the outer one back."""
    outer = syrupy._syrupy
    yield
    syrupy._syrupy = outer
