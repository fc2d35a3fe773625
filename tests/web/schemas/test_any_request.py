"""Property test: any bytes as a body, any text in a path or a query, to every endpoint.

Whatever is sent, on SQLite and PostgreSQL, the answer is a 2xx or a 4xx (never a 5xx: the
corpus has its model, so even 503 ``model_missing`` cannot happen), and every answer under
``/api/`` is JSON, an error being ``{"error": {"code", "message"}}`` (issue 46's must-show).
Requests go through Flask's test client with the environ a server builds from raw bytes
(``PATH_INFO`` and ``QUERY_STRING`` as latin-1 text, ``RAW_URI`` as sent), so paths and queries
that are not UTF-8, or not valid escapes, reach the app as they would from a socket.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote_from_bytes, unquote_to_bytes

import pytest
from flask.testing import FlaskClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.web.conftest import AUTH

# Every operation, with "{}" where an id goes (filled with arbitrary text).
OPERATIONS = [
    ("GET", "/api/v1/articles/{}"),
    ("DELETE", "/api/v1/articles/{}"),
    ("GET", "/api/v1/articles/{}/related"),
    ("GET", "/api/v1/articles/{}/duplicates"),
    ("POST", "/api/v1/articles"),
    ("POST", "/api/v1/users/{}/events"),
    ("GET", "/api/v1/users/{}/feed"),
    ("POST", "/api/v1/overrides"),
    ("GET", "/api/v1/overrides"),
    ("DELETE", "/api/v1/overrides/{}"),
    ("POST", "/api/v1/feedback"),
    ("GET", "/api/v1/health"),
    ("GET", "/api/v1/health/live"),
    ("GET", "/api/v1/health/ready"),
    ("GET", "/api/v1/{}"),  # no such endpoint
    ("PUT", "/api/v1/articles"),  # no such method
    ("GET", "/openapi.json"),
    ("GET", "/widget.js"),
    ("GET", "/metrics"),
    ("GET", "/"),
]
NAMES = [
    "k",
    "offset",
    "min_score",
    "exclude",
    "categories",
    "category",
    "tags",
    "tag",
    "published_after",
    "after",
    "published_before",
    "before",
    "reader",
    "session",
    "kind",
    "article",
    "limit",
]
CONTENT_TYPES = ["application/json", "text/plain", "application/x-www-form-urlencoded", None]

# Text as people and programs write it: digits of every script, escapes, separators, surrogates.
TEXT = st.text(max_size=40) | st.sampled_from(
    ["", "0", "3", "-1", "٣", "１", "²", "1e9", "nan", "a,b", ",", "%", "%ZZ", "%FF", "%00", "a/b"]
)
RAW = (
    st.binary(max_size=30)
    | TEXT.map(lambda t: t.encode("utf-8", "surrogatepass"))
    | st.integers(-5, 300).map(lambda n: str(n).encode())
)
NAME = st.sampled_from(NAMES) | st.sampled_from(NAMES) | st.sampled_from(NAMES) | TEXT
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=8,
)
FIELDS = ["id", "title", "content", "url", "tags", "article", "at", "kind", "other", "type", "slot"]
OBJECT = st.dictionaries(st.sampled_from(FIELDS) | TEXT, JSON, max_size=5)
BODY = st.binary(max_size=200) | (OBJECT | st.lists(OBJECT, max_size=3) | JSON).map(
    lambda v: json.dumps(v, ensure_ascii=False).encode("utf-8", "surrogatepass")
)


def encoded(raw: bytes, encode: bool, safe: str = "") -> bytes:
    """Percent-encoded (as a client should send it) or the bytes as they come."""
    return quote_from_bytes(raw, safe=safe).encode() if encode else raw


@st.composite
def requests(draw: st.DrawFn) -> dict[str, Any]:
    """A request; an id is a corpus article's (an int: its index) or any bytes."""
    method, template = draw(st.sampled_from(OPERATIONS))
    slot = draw(st.integers(0, 11) | RAW)
    encode = draw(st.booleans())
    pairs = draw(st.lists(st.tuples(NAME, RAW), max_size=4))
    query = b"&".join(
        encoded(name.encode("utf-8", "surrogatepass"), encode).replace(b"&", b"%26")
        + b"="
        + encoded(value, encode, safe=",").replace(b"&", b"%26")
        for name, value in pairs
    )
    return {
        "method": method,
        "template": template.encode(),
        "slot": slot,
        "encode": encode,
        "query": query.replace(b"#", b"%23").replace(b" ", b"+"),
        "body": draw(BODY) if method in ("POST", "PUT") else b"",
        "content_type": draw(st.sampled_from(CONTENT_TYPES)),
        "key": draw(st.booleans() | st.just(True)),
    }


def path_of(request: dict[str, Any], ids: list[str]) -> bytes:
    template: bytes = request["template"]
    if b"{}" not in template:
        return template
    slot = request["slot"]
    if isinstance(slot, int):
        raw, encode = ids[slot].encode(), True
    else:
        raw, encode = slot or b"x", request["encode"]
    segment = encoded(raw, encode).replace(b"?", b"%3F").replace(b"#", b"%23")
    return template.replace(b"{}", segment)


def send(client: FlaskClient, request: dict[str, Any], path: bytes) -> Any:
    query: bytes = request["query"]
    target = path + (b"?" + query if query else b"")
    environ = {
        "PATH_INFO": unquote_to_bytes(path).decode("latin-1"),
        "QUERY_STRING": query.decode("latin-1"),
        "RAW_URI": target.decode("latin-1"),
        "REQUEST_URI": target.decode("latin-1"),
    }
    headers = dict(AUTH) if request["key"] else {}
    if request["content_type"]:
        headers["Content-Type"] = request["content_type"]
    return client.open(
        "/",
        method=request["method"],
        data=request["body"],
        headers=headers,
        environ_overrides=environ,
    )


@pytest.fixture
def corpus_size() -> int:
    return 12


@settings(
    max_examples=500,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
    derandomize=True,
)
@given(request=requests())
def test_any_request_is_answered_2xx_or_4xx_with_a_json_error(
    client: FlaskClient, corpus: list[dict[str, Any]], request: dict[str, Any]
) -> None:
    path = path_of(request, [r["id"] for r in corpus])
    response = send(client, request, path)
    status = response.status_code
    assert status < 500, (status, path, request, response.get_data()[:300])
    if not path.startswith(b"/api/"):
        return
    assert response.mimetype == "application/json", (request, response.headers)
    body = json.loads(response.get_data())
    if status >= 400:
        assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
        assert body["error"]["code"] and body["error"]["message"], body
