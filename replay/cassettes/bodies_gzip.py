"""Gzip bodies decompressed within a size bound."""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass


MAX_BODY = 64 * 1024 * 1024
"""Largest body we decompress (a hostile gzip body cannot fill the memory)."""


def gunzip(raw: bytes) -> bytes | None:
    """A gzip body decompressed (at most MAX_BODY bytes); None when it is not valid gzip or too large."""
    inflater = zlib.decompressobj(wbits=47)
    try:
        out = inflater.decompress(raw, MAX_BODY)
    except zlib.error:
        return None
    return None if inflater.unconsumed_tail else out
