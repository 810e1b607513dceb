"""Field docstrings into a record's JSON Schema, read from the source only when a schema is made."""

from __future__ import annotations

import ast
import functools
import inspect
import sys
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.config import JsonDict

# pydantic's `use_attribute_docstrings` reads them when each class is made: about 1 ms of parsing per class,
# paid by every command that imports the records; only `judge-replay schema` shows them.


@functools.cache
def _docstrings_of_module(module: str) -> dict[str, dict[str, str]]:
    """Class name -> {field name -> the string literal under its annotation}, for the module's top-level
    classes (empty when its source cannot be read)."""
    try:
        tree = ast.parse(inspect.getsource(sys.modules[module]))
    except (OSError, TypeError, KeyError):
        return {}
    classes: dict[str, dict[str, str]] = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        docs = classes[node.name] = {}
        for field, after in zip(node.body, node.body[1:]):
            if (isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name)
                    and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)):
                docs[field.target.id] = inspect.cleandoc(after.value.value)
    return classes


def field_docstrings(cls: type[BaseModel]) -> dict[str, str]:
    """Field name -> its docstring, for the fields of `cls` and of the records it extends."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        docs.update(_docstrings_of_module(klass.__module__).get(klass.__qualname__, {}))
    return docs


def _describe_fields(schema: JsonDict, cls: type[Any]) -> None:
    docs = field_docstrings(cls)
    properties = schema.get("properties")
    for name, field in properties.items() if isinstance(properties, dict) else ():
        if name in docs and isinstance(field, dict):
            field.setdefault("description", docs[name])


class DescribedRecord(BaseModel):
    """A record whose JSON Schema describes each field with the docstring under it (one definition, read by
    people in the source and by tools in `judge-replay schema`)."""

    model_config = ConfigDict(json_schema_extra=_describe_fields, defer_build=True)
