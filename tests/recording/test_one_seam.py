"""One HTTP seam: no code of the package writes a library's private attribute, looks behind another
library's wrapper, or replaces an attribute of a library's class or module; the recording transports
handed to the clients we build are the only interception (`test_recorder` checks at run time that a
recording leaves the classes of httpx and httpx2 as they were)."""

from __future__ import annotations

import ast
from pathlib import Path

from locations import REPO

LIBRARIES = {"httpx", "httpx2", "httpcore", "httpcore2", "anthropic", "vcr", "mcp"}
FORBIDDEN_ATTRIBUTES = {"_pool", "__wrapped__", "unwrap"}


def _library_names(tree: ast.Module) -> set[str]:
    """The names a module binds to a library or to something imported from one."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name.split(".")[0] in LIBRARIES}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in LIBRARIES:
            names |= {a.asname or a.name for a in node.names}
    return names


def _root(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def offences(source: str) -> list[str]:
    tree = ast.parse(source)
    libraries = _library_names(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_ATTRIBUTES:
            found.append(f"line {node.lineno}: .{node.attr}")
        if isinstance(node, ast.ImportFrom) and node.module == "inspect" and any(a.name == "unwrap" for a in node.names):
            found.append(f"line {node.lineno}: inspect.unwrap")
        targets = (node.targets if isinstance(node, ast.Assign) else
                   [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
        for target in targets:
            if isinstance(target, ast.Attribute) and _root(target) in libraries:
                found.append(f"line {node.lineno}: assigns {ast.unparse(target)}")
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr")
                and node.args and _root(node.args[0]) in libraries):
            found.append(f"line {node.lineno}: {node.func.id}({ast.unparse(node.args[0])}, ...)")
    return found


def test_no_module_of_the_package_patches_or_reaches_into_a_library() -> None:
    found = {str(path.relative_to(REPO)): hits for path in sorted((REPO / "replay").rglob("*.py"))
             if (hits := offences(path.read_text("utf-8")))}
    assert found == {}


def test_the_check_sees_each_way_of_reaching_in() -> None:
    patched = '''
import inspect
import httpx2
from httpx import HTTPTransport
from inspect import unwrap

class T(httpx2.HTTPTransport):
    def __init__(self):
        self._pool = None

HTTPTransport.handle_request = None
setattr(httpx2.HTTPTransport, "handle_request", None)
network = inspect.unwrap(httpx2.HTTPTransport.handle_request)
original = httpx2.HTTPTransport.handle_request.__wrapped__
'''
    assert sorted(offences(patched)) == sorted([
        "line 5: inspect.unwrap", "line 9: ._pool", "line 11: assigns HTTPTransport.handle_request",
        "line 12: setattr(httpx2.HTTPTransport, ...)", "line 13: .unwrap", "line 14: .__wrapped__"])
    assert offences("import httpx\nclient = httpx.Client()\nclient.timeout = 5\n") == []
