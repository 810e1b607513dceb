"""The secrets of the environment, registered before a command reads anything."""

from __future__ import annotations

from replay.secrets import registry as _secrets
from replay.secrets.environment import remember_environment


def test_keys_and_endpoint_credentials_of_the_environment_are_remembered() -> None:
    remember_environment({"ANTHROPIC_API_KEY": "sk-ant-api03-Zq8vN3kR7tY2wP5mX9bC",
                          "ANTHROPIC_AUTH_TOKEN": "tok-7Gh2Kq9Lm4Np",
                          "JUDGE_REPLAY_LEARN_URL": "https://proxy.example/api/mcp?key=Qk3yCanary55abc",
                          "ANTHROPIC_BASE_URL": "https://user:Pw9Canary77x@gateway.example",
                          "HOME": "/home/someone-long"})
    text = "sk-ant-api03-Zq8vN3kR7tY2wP5mX9bC tok-7Gh2Kq9Lm4Np Qk3yCanary55abc Pw9Canary77x /home/someone-long"
    assert _secrets.redact(text) == "REDACTED REDACTED REDACTED REDACTED /home/someone-long"


def test_an_empty_environment_remembers_nothing() -> None:
    remember_environment({"ANTHROPIC_API_KEY": ""})
    assert not _secrets.known()
