"""mkdocs hook: one reference page per JSON Schema of `replay.schema.catalog`, made at build time.

For each schema `judge-replay schema NAME` prints, the site gets `reference/schemas/NAME.md` (every record
as a table of its fields: name, type, required or default, and the field's docstring from the code) and
`reference/schemas/NAME.schema.json` (the raw schema, byte for byte what the command prints), and the
nav gets one entry per schema under the section whose index is `reference/schemas/index.md`. The pages
are never written to the repository: the code is their only source.
"""

from __future__ import annotations

import ast
import inspect
import json
import re
import textwrap
import typing
from typing import Any

from mkdocs.structure.files import File
from pydantic import BaseModel

from replay.files.json_text import dump_json
from replay.schema.catalog import SCHEMAS, json_schema

FOLDER = "reference/schemas"
INDEX = f"{FOLDER}/index.md"

TITLES = {
    "claims": "Claims batch",
    "gold": "Gold set",
    "results": "Results file",
    "run": "run.json",
    "grade": "grade --json",
    "gate": "grade --json: gate",
    "diff": "diff --format json",
    "drift": "drift --json",
}
"""Nav titles of the schemas; a schema added to the catalog without one is titled by its name."""


def title(name: str) -> str:
    return TITLES.get(name, name)


# --------------------------------------------------------------------------- docstrings of fields


def _attribute_docstrings(cls: type) -> dict[str, str]:
    """The docstring written under each field of a class (`x: int` then `\"\"\"...\"\"\"`), as pydantic's
    `use_attribute_docstrings` would read it; the records do not turn that option on."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    body = ast.parse(source).body[0]
    assert isinstance(body, ast.ClassDef)
    docs: dict[str, str] = {}
    for field, after in zip(body.body, body.body[1:]):
        if (isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name)
                and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)):
            docs[field.target.id] = inspect.cleandoc(after.value.value)
    return docs


def _models_in(annotation: Any, found: dict[str, type[BaseModel]]) -> None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if annotation.__name__ not in found:
            found[annotation.__name__] = annotation
            for info in annotation.model_fields.values():
                _models_in(info.annotation, found)
        return
    for arg in typing.get_args(annotation):
        _models_in(arg, found)


def field_docs(root: type[BaseModel]) -> dict[str, dict[str, str]]:
    """Record name (as the schema's `$defs` names it) -> field -> docstring, for `root` and every record in it."""
    models: dict[str, type[BaseModel]] = {}
    _models_in(root, models)
    docs: dict[str, dict[str, str]] = {}
    for name, cls in models.items():
        merged: dict[str, str] = {}
        for base in reversed(cls.__mro__):  # a subclass's docstring wins over its base's
            if isinstance(base, type) and issubclass(base, BaseModel) and base is not BaseModel:
                merged.update(_attribute_docstrings(base))
        docs[name] = merged
    return docs


# --------------------------------------------------------------------------- rendering


def _anchor(name: str) -> str:
    return "def-" + name.lower()


def _cell(text: str) -> str:
    """Text for a markdown table cell: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def _doc(text: str) -> str:
    """A docstring as a JSON reader reads it: Python's `None` is JSON's `null`."""
    return _cell(re.sub(r"\bNone\b", "null", text))


def type_text(s: dict[str, Any]) -> str:
    """A property's JSON Schema as a short, readable type (markdown): `string or null`, `list of [Claim](#...)`."""
    if "$ref" in s:
        name = s["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{_anchor(name)})"
    if "anyOf" in s:
        options = [o for o in s["anyOf"] if o.get("type") != "null"]
        nullable = len(options) < len(s["anyOf"])
        text = " or ".join(type_text(o) for o in options)
        return f"{text} or null" if nullable else text
    if "enum" in s:
        return "one of " + ", ".join(f"`{json.dumps(v)}`" for v in s["enum"])
    if "const" in s:
        return f"`{json.dumps(s['const'])}`"
    kind = s.get("type")
    if kind == "array":
        if "prefixItems" in s:
            return "[" + ", ".join(type_text(i) for i in s["prefixItems"]) + "]"
        items = s.get("items", {})
        text = ("list, each " if "enum" in items else "list of ") + type_text(items) if items else "list"
        return text + (f", at least {s['minItems']}" if s.get("minItems") else "")
    if kind == "string" and s.get("minLength"):
        return "string, not empty" if s["minLength"] == 1 else f"string, at least {s['minLength']} characters"
    if kind == "object":
        extra = s.get("additionalProperties")
        if isinstance(extra, dict) and extra:
            return "map of string to " + type_text(extra)
        return "object"
    if isinstance(kind, list):
        return " or ".join(kind)
    return kind or "any"


def _default_text(prop: dict[str, Any], required: bool) -> str:
    if required:
        return "required"
    if "default" not in prop:
        return ""
    return f"`{json.dumps(prop['default'], ensure_ascii=False)}`"


def record_table(record: dict[str, Any], docs: dict[str, str]) -> list[str]:
    """The fields of one record (a schema object) as a markdown table."""
    required = set(record.get("required", []))
    props: dict[str, Any] = record.get("properties", {})
    if not props:
        return ["(no fields)"]
    lines = ["| field | type | default | what it is |", "|---|---|---|---|"]
    for field, prop in props.items():
        doc = docs.get(field) or prop.get("description", "")
        lines.append(f"| `{field}` | {_cell(type_text(prop))} | {_cell(_default_text(prop, field in required))} "
                     f"| {_doc(doc)} |")
    if record.get("additionalProperties") is True:
        lines += ["", "Fields not listed here are kept as they are and ignored."]
    return lines


def _referenced(schema: Any, out: list[str]) -> None:
    """The `$defs` names `schema` refers to, in the order they first appear (depth first)."""
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.rsplit("/", 1)[-1] not in out:
            out.append(ref.rsplit("/", 1)[-1])
        for key, value in schema.items():
            if key != "$defs":
                _referenced(value, out)
    elif isinstance(schema, list):
        for value in schema:
            _referenced(value, out)


def _definitions_in_order(schema: dict[str, Any]) -> list[str]:
    defs = schema.get("$defs", {})
    order: list[str] = []
    _referenced(schema, order)
    i = 0
    while i < len(order):  # each definition's own references follow it
        _referenced(defs.get(order[i], {}), order)
        i += 1
    return [name for name in order if name in defs] + [name for name in defs if name not in order]


def schema_page(name: str) -> str:
    """The markdown of `reference/schemas/<name>.md`."""
    schema = json_schema(name)
    root = SCHEMAS[name]
    docs = field_docs(root)
    root_name = schema.get("title", root.__name__)
    parts = [
        f"# {title(name)}",
        "",
        (f"The JSON Schema of `{root_name}`, generated from the code when this site was built; "
         f"`judge-replay schema {name}` prints the same schema. Raw: [{name}.schema.json]({name}.schema.json)."),
        "",
    ]
    if schema.get("description"):
        parts += [_doc(schema["description"]), ""]
    parts += [f"## {root_name} {{#{_anchor(root_name)}}}", "", *record_table(schema, docs.get(root_name, {})), ""]
    for definition in _definitions_in_order(schema):
        record = schema["$defs"][definition]
        parts += [f"## {definition} {{#{_anchor(definition)}}}", ""]
        if record.get("description"):
            parts += [_doc(record["description"]), ""]
        if record.get("type") == "object" or "properties" in record:
            parts += record_table(record, docs.get(definition, {}))
        else:
            parts.append(f"Type: {_cell(type_text(record))}")
        parts.append("")
    parts += ["## Raw schema", "", '??? note "The whole JSON Schema"', "", "    ```json"]
    parts += [f"    {line}" if line else "" for line in dump_json(schema).splitlines()]
    parts += ["    ```", ""]
    return "\n".join(parts)


# --------------------------------------------------------------------------- mkdocs events


def on_config(config: Any) -> Any:
    """Add one nav entry per schema to the section whose index is `reference/schemas/index.md`."""
    def visit(items: Any) -> bool:
        for item in items if isinstance(items, list) else []:
            children = next(iter(item.values())) if isinstance(item, dict) and len(item) == 1 else None
            if isinstance(children, list):
                if INDEX in children:
                    children.extend({title(n): f"{FOLDER}/{n}.md"} for n in SCHEMAS)
                    return True
                if visit(children):
                    return True
        return False

    if not visit(config["nav"]):
        raise ValueError(f"mkdocs.yml: no nav section holds {INDEX}, where the schema pages go")
    return config


def on_files(files: Any, config: Any) -> Any:
    for name in SCHEMAS:
        files.append(File.generated(config, f"{FOLDER}/{name}.md", content=schema_page(name)))
        files.append(File.generated(config, f"{FOLDER}/{name}.schema.json", content=dump_json(json_schema(name))))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """`{{ schema-list }}` in a page: a list linking every schema page (the index uses it)."""
    if "{{ schema-list }}" not in markdown:
        return markdown
    prefix = "" if page.file.src_uri.startswith(f"{FOLDER}/") else f"{FOLDER}/"
    rows = [f"- [{title(n)}]({prefix}{n}.md): `judge-replay schema {n}`, the schema of `{SCHEMAS[n].__name__}`"
            for n in SCHEMAS]
    return markdown.replace("{{ schema-list }}", "\n".join(rows))
