"""The secrets a process's environment holds, registered before a command reads or writes anything."""

from __future__ import annotations

import os
from collections.abc import Mapping

from replay.secrets.registry import remember, remember_url

KEY_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
"""Variables whose whole value is a secret."""
URL_VARIABLES = ("ANTHROPIC_BASE_URL", "JUDGE_REPLAY_ANTHROPIC_BASE_URL", "JUDGE_REPLAY_LEARN_URL")
"""Variables holding an endpoint, whose credentials (userinfo, credential query values) are secrets."""


def remember_environment(environ: Mapping[str, str] | None = None) -> None:
    """Register the secrets of the environment (`KEY_VARIABLES`, the credentials of `URL_VARIABLES`), so
    that whatever this process then reads (a cassette, a page, a claim holding one) is never cached,
    written or printed with them. Every command calls it first (the CLI's group, the pytest plugin)."""
    environ = os.environ if environ is None else environ
    for name in KEY_VARIABLES:
        remember(environ.get(name))
    for name in URL_VARIABLES:
        remember_url(environ.get(name))
