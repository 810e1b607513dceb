"""One HTTP exchange as a cassette stores it, read from any vcrpy-style cassette."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, TypeVar

from replay.cassettes.bodies_gzip import MAX_BODY, gunzip
from replay.errors import UsageError
from replay.files.json_text import indented_json, parse_json_noting_floats

T = TypeVar("T")


@dataclass
class Interaction:
    """One HTTP exchange as stored in a cassette."""

    method: str
    uri: str
    request_body: str | None
    status: int
    response_body: str
    request_headers: dict[str, list[str]] = field(default_factory=dict)
    response_headers: dict[str, list[str]] = field(default_factory=dict)
    reason: str = ""

    def header(self, name: str) -> str | None:
        values = self.response_headers.get(name.lower())
        return values[0] if values else None

    def request_json(self) -> Any:
        """The request body parsed as JSON, or None."""
        if not self.request_body:
            return None
        try:
            return json.loads(self.request_body)
        except (ValueError, RecursionError):  # not JSON, or a number of more than 4300 digits
            return None

    def to_vcr(self) -> dict[str, Any]:
        return {
            "request": {
                "method": self.method,
                "uri": self.uri,
                "headers": {k: list(v) for k, v in sorted(self.request_headers.items())},
                "body": _readable(self.request_body),
            },
            "response": {
                "status": {"code": self.status, "message": self.reason},
                "headers": {k: list(v) for k, v in sorted(self.response_headers.items())},
                "body": {"string": _readable(self.response_body)},
            },
        }

    @classmethod
    def from_vcr(cls, d: Any) -> Interaction:
        """One interaction of a vcrpy cassette (ours, stock vcrpy's with `!!binary` gzip bodies, or
        pydantic-ai's `parsed_body` variant). Raises _Malformed saying what is wrong."""
        item = _mapping(d, "the interaction")
        req = _mapping(item.get("request"), "request")
        resp = _mapping(item.get("response"), "response")
        status = _mapping(resp.get("status"), "response.status")
        code = status.get("code")
        if (isinstance(code, bool) or not isinstance(code, (int, str)) or not str(code).isascii()
                or not str(code).isdigit() or len(str(code)) > 3):  # what int() reads, HTTP's three digits
            raise _Malformed(f"response.status.code is {code!r}, not an HTTP status")
        method, uri = req.get("method"), req.get("uri")
        if not isinstance(method, str) or not method:
            raise _Malformed("request.method is missing or not text")
        if not isinstance(uri, str) or not uri:
            raise _Malformed("request.uri is missing or not text")
        request_headers = _headers(req.get("headers"), "request.headers")
        response_headers = _headers(resp.get("headers"), "response.headers")
        body = resp.get("body", {})
        rbody = body.get("string", "") if isinstance(body, dict) else body
        if "parsed_body" in resp:  # pydantic-ai's variant
            rbody = json.dumps(resp["parsed_body"], ensure_ascii=False)
        rtext = _body_text(rbody, response_headers, "response.body")
        qbody = req.get("body")
        if isinstance(qbody, dict) and "string" in qbody:
            qbody = qbody["string"]
        if "parsed_body" in req:
            qbody = json.dumps(req["parsed_body"], ensure_ascii=False)
        message = status.get("message")
        return cls(
            method=method,
            uri=uri,
            request_body=_body_text(qbody, {}, "request.body") or None,
            status=int(code),
            reason=message if isinstance(message, str) else "",
            response_body=rtext,
            request_headers=request_headers,
            response_headers=response_headers,
        )


class _Malformed(ValueError):
    """What is wrong with one interaction of a cassette."""


def _mapping(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Malformed(f"{what} is {type(value).__name__ if value is not None else 'missing'}, expected a mapping")
    return value


def _body_text(body: Any, headers: dict[str, list[str]], what: str) -> str:
    """A stored body as text. Stock vcrpy keeps a compressed body as bytes (`!!binary`) beside its
    `content-encoding` header: it is decoded, and the header (with `content-length`) dropped."""
    if body is None:
        return ""
    if isinstance(body, str):
        return body
    if isinstance(body, (bytes, bytearray)):
        raw = bytes(body)
        encodings = [e.strip().lower() for v in headers.get("content-encoding", []) for e in v.split(",") if e.strip()]
        if encodings == ["gzip"]:  # stock vcrpy's usual case, decompressed within a size bound
            unzipped = gunzip(raw)
            if unzipped is None:
                raise _Malformed(f"{what}: not valid gzip data, or larger than {MAX_BODY // 2**20} MB once decompressed")
            raw = unzipped
            headers.pop("content-encoding", None)
            headers.pop("content-length", None)
        elif encodings:
            try:
                raw = decode_content(raw, encodings)
            except UsageError as exc:
                raise _Malformed(f"{what}: {exc}") from None
            except Exception as exc:  # a decoder's own error on a corrupt body (httpx.DecodingError, zlib.error)
                raise _Malformed(f"{what}: not valid {'/'.join(encodings)} data ({exc})") from None
            headers.pop("content-encoding", None)
            headers.pop("content-length", None)
        elif raw[:2] == b"\x1f\x8b":
            raw = gunzip(raw) or raw
        return raw.decode("utf-8", "replace")
    raise _Malformed(f"{what} is {type(body).__name__}, expected text")


def decode_content(raw: bytes, encodings: list[str]) -> bytes:
    """Undo content encodings (last applied first) with httpx's decoders: a client only asks for
    encodings it can decode, and these are the decoders it uses."""
    from httpx._decoders import SUPPORTED_DECODERS

    for encoding in reversed(encodings):
        if encoding == "identity":
            continue
        decoder_class = SUPPORTED_DECODERS.get(encoding)
        if decoder_class is None:
            raise UsageError(f"cannot store a response sent with content-encoding {encoding!r}: record without it")
        decoder = decoder_class()
        raw = decoder.decode(raw) + decoder.flush()
    return raw


def _headers(raw: Any, what: str) -> dict[str, list[str]]:
    if raw is None:
        return {}
    out: dict[str, list[str]] = {}
    for k, v in _mapping(raw, what).items():
        values = v if isinstance(v, list) else [v]
        if any(isinstance(x, (dict, list)) for x in values):
            raise _Malformed(f"{what}.{k} is not a header value")
        out.setdefault(str(k).lower(), []).extend(values)
    return {k: [str(x) for x in v] for k, v in out.items()}


def _readable(body: str | None) -> str | None:
    """JSON bodies re-indented for people and diffs (`files.json_text.indented_json`); anything else unchanged."""
    if not body or body[:1] not in "{[":
        return body
    try:
        data, float_free = parse_json_noting_floats(body)
        readable = indented_json(data, float_free=float_free)
        if not body.isascii() or "\\ud" in body or "\\uD" in body:  # else no surrogate can be in it
            readable.encode("utf-8")  # a lone surrogate (raw, or escaped) cannot be written as text: keep the body as sent
        return readable
    except (ValueError, RecursionError):  # not JSON, a number too long to read, a lone surrogate
        return body
