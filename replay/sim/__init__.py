"""The local stand-ins (test equipment): a Learn MCP server over a page folder, and a Messages API
server with a deterministic judge policy. Real HTTP servers on 127.0.0.1 that real clients talk to."""

from __future__ import annotations


from replay.sim.http_server import StandIn
from replay.sim.learn import LearnStandIn, start_learn
from replay.sim.model import ModelStandIn, start_model
from replay.sim.policy import judge_claim


__all__ = ["LearnStandIn", "ModelStandIn", "StandIn", "judge_claim", "start_learn", "start_model"]
