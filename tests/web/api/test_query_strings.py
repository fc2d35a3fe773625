"""Numbers and text in paths and query strings, as sent by hand and by programs (issue 45,
items 22-23; issue 46, item 12), on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import socket
from typing import Any, get_origin
from urllib.parse import quote, urlsplit

import pytest
from flask.testing import FlaskClient

from recengine.config import Settings
from recengine.errors import InvalidRequest
from recengine.recommend.lists.params import check_int, check_score
from recengine.web.pages.demo import DemoQuery
from recengine.web.schemas.core import LIST_PARAMETERS, build_models
from recengine.web.schemas.editorial import OverridesQuery
from tests.web.api.test_articles import assert_error
from tests.web.conftest import AUTH
from tests.web.server.test_serve import server_env
from tests.web.serving import call, served

OVERRIDES = "/api/v1/overrides"
# Digits of other scripts that str.isdigit(), int() or werkzeug's \d take for ASCII ones.
OTHER_THREES = ["%D9%A3", "%EF%BC%93", "%E0%A5%A9", "%C2%B3"]  # Arabic-Indic, fullwidth, ...


@pytest.fixture
def corpus_size() -> int:
    return 8


def test_ids_in_paths_are_ascii_digits_only(
    client: FlaskClient, corpus: list[dict[str, Any]]
) -> None:
    ids = [r["id"] for r in corpus]
    for other in ids[1:5]:
        body = {"kind": "block", "article": ids[0], "other": other}
        assert client.post(OVERRIDES, json=body, headers=AUTH).status_code == 200
    for three in OTHER_THREES:
        response = client.delete(f"{OVERRIDES}/{three}", headers=AUTH)
        assert_error(response, 404, "not_found")
    listed = client.get(OVERRIDES, headers=AUTH).get_json()["overrides"]
    assert [o["id"] for o in listed] == [1, 2, 3, 4]  # override 3 is still there
    assert client.delete(f"{OVERRIDES}/3", headers=AUTH).status_code == 200


def test_numbers_in_query_strings_are_ascii_digits_only(
    client: FlaskClient, corpus: list[dict[str, Any]]
) -> None:
    related = f"/api/v1/articles/{corpus[0]['id']}/related"
    cases = [
        (related, "k", ["%D9%A3", "%EF%BC%93", "3.0", "1_0", "%203", "+3"]),
        (related, "offset", ["%D9%A3", "1_0"]),
        (related, "min_score", ["%D9%A0.%D9%A5", "%EF%BC%90.5"]),
        ("/api/v1/users/reader/feed", "k", ["%D9%A3", "3.0"]),
        (OVERRIDES, "after", ["%D9%A3", "1_0"]),
        (OVERRIDES, "limit", ["%D9%A3"]),
    ]
    for path, name, values in cases:
        for value in values:
            response = client.get(f"{path}?{name}={value}", headers=AUTH)
            body = assert_error(response, 422, "invalid_request")
            assert body["error"]["message"].startswith(f"{name}: "), body
            assert "ASCII digits" in body["error"]["message"], body
    assert len(client.get(f"{related}?k=3&offset=1&min_score=0.0").get_json()["items"]) == 3


def test_python_callers_get_the_same_rule_for_numbers_given_as_text() -> None:
    assert check_int("7", "k", 1, 10) == 7 and check_score("0.5") == 0.5
    for value in ("٣", "３", "²"):  # "²".isdigit() is true, int("²") a ValueError
        with pytest.raises(InvalidRequest, match="k must be an integer"):
            check_int(value, "k", 1, 10)
    for value in ("٠.٥", "０.5", "nan"):
        with pytest.raises(InvalidRequest, match="min_score must be a number"):
            check_score(value)


# -- raw UTF-8 in a URL, as a newcomer pastes it (issue 45, item 22) -------------------------

TAG = "个人经历"  # a tag of the corpus's articles
NOT_UTF8 = ["tags=\xff", "tags=%FF", "tags=%E4%B8"]  # a raw byte; escapes of a byte, half a char


def related_path(corpus: list[dict[str, Any]]) -> str:
    return f"/api/v1/articles/{quote(corpus[1]['id'], safe='')}/related"


def assert_not_utf8(status: int, body: dict[str, Any]) -> None:
    assert status == 400 and body["error"]["code"] == "bad_request", body
    message = body["error"]["message"]
    assert "not UTF-8" in message and "?categories=%E6%95%B0%E6%8D%AE%E5%BA%93" in message
    assert "数据库" in message


def as_sent(path: str, query: str) -> dict[str, str]:
    """The environ of a request whose query string's bytes are ``query`` (latin-1 text)."""
    return {"QUERY_STRING": query, "RAW_URI": f"{path}?{query}", "REQUEST_URI": f"{path}?{query}"}


def test_the_app_reads_a_raw_utf8_query_and_refuses_one_it_cannot_decode(
    client: FlaskClient, corpus: list[dict[str, Any]]
) -> None:
    """A WSGI server that passes raw bytes on (werkzeug's own) gives them to the app as is."""
    path = related_path(corpus)
    encoded = client.get(f"{path}?tags={quote(TAG)}&min_score=0")
    assert encoded.status_code == 200 and encoded.get_json()["items"]
    raw = f"tags={TAG}&min_score=0".encode().decode("latin-1")  # PEP 3333: bytes as latin-1
    typed = client.get(path, environ_overrides=as_sent(path, raw))
    assert typed.status_code == 200 and typed.get_json() == encoded.get_json()
    for query in NOT_UTF8:
        response = client.get(path, environ_overrides=as_sent(path, query))
        assert_not_utf8(response.status_code, assert_error(response, 400, "bad_request"))


def raw_get(base: str, target: bytes, key: bool = False) -> tuple[int, dict[str, Any]]:
    """GET with the target's bytes as they are (http.client would refuse raw UTF-8); with the
    API key when ``key`` (a reader's feed needs it)."""
    parts = urlsplit(base)
    auth = f"Authorization: {AUTH['Authorization']}\r\n".encode() if key else b""
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        sock.sendall(
            b"GET " + target + b" HTTP/1.1\r\nHost: x\r\n" + auth + b"Connection: close\r\n\r\n"
        )
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), json.loads(body.decode("utf-8"))


def test_the_server_answers_a_url_typed_with_raw_utf8(
    settings: Settings, corpus: list[dict[str, Any]]
) -> None:
    """gunicorn refuses raw UTF-8 in a request line (400, the line quoted as mojibake): the
    worker percent-encodes it first, as a browser would, or says how to send it."""
    path = related_path(corpus)
    with served(["serve", "--port", "0", "--workers", "1"], server_env(settings)) as server:
        encoded = call(server.url, "GET", f"{path}?tags={quote(TAG)}&min_score=0")
        assert encoded.status == 200 and encoded.json()["items"]
        status, body = raw_get(server.url, f"{path}?tags={TAG}&min_score=0".encode())
        assert status == 200 and body == encoded.json()
        status, body = raw_get(server.url, f"/api/v1/users/读者/feed?tags={TAG}".encode(), key=True)
        assert status == 200 and body["user"] == "读者", body
        for query in NOT_UTF8:
            status, body = raw_get(server.url, f"{path}?".encode() + query.encode("latin-1"))
            assert_not_utf8(status, body)


# -- list parameters: repeated, or separated by commas (issue 45, item 23) --------------------


def listed(client: FlaskClient, path: str) -> list[str]:
    response = client.get(path)
    assert response.status_code == 200, response.get_data()[:300]
    return [i["id"] for i in response.get_json()["items"]]


def test_list_parameters_split_at_commas_and_keep_an_encoded_one(
    client: FlaskClient, corpus: list[dict[str, Any]]
) -> None:
    query, a, b = corpus[5], corpus[6], corpus[2]
    mixed = query["content"][:1500] + "\n" + a["content"][:1500]
    fresh = {"id": "mixed,copy", "title": "新文章", "content": mixed}  # an id with a comma
    assert client.post("/api/v1/articles", json=fresh, headers=AUTH).status_code == 200
    path = f"/api/v1/articles/{quote(query['id'], safe='')}/related?k=50&min_score=0"
    every = listed(client, path)
    assert {a["id"], b["id"], "mixed,copy"} <= set(every)
    pair = f"{quote(a['id'], safe='')},{quote(b['id'], safe='')}"
    assert {a["id"], b["id"]}.isdisjoint(listed(client, f"{path}&exclude={pair}"))
    assert "mixed,copy" not in listed(client, f"{path}&exclude=mixed%2Ccopy")
    assert "mixed,copy" in listed(client, f"{path}&exclude=mixed,copy")  # "mixed" and "copy"
    # categories and tags: any of the values (before: the one category "走近作者,x")
    tags = {t for r in corpus if r["id"] in every for t in r.get("tags") or []}
    assert len(tags) >= 2, tags
    one, two = sorted(tags)[:2]
    both = listed(client, f"{path}&tags={quote(one)},{quote(two)}")
    assert set(both) == set(listed(client, f"{path}&tags={quote(one)}&tags={quote(two)}"))
    assert set(both) > set(listed(client, f"{path}&tags={quote(one)}"))
    category = corpus[1]["category"]
    assert listed(client, f"{path}&category={quote(category)},none") == listed(
        client, f"{path}&category={quote(category)}"
    )
    # an empty value between commas is refused, never dropped
    response = client.get(f"{path}&exclude={quote(a['id'], safe='')},")
    assert_error(response, 422, "invalid_request")


def test_override_kinds_split_at_commas(client: FlaskClient, corpus: list[dict[str, Any]]) -> None:
    ids = [r["id"] for r in corpus]
    for kind, other in (("block", ids[1]), ("pin", ids[2]), ("block", ids[3])):
        body = {"kind": kind, "article": ids[0], "other": other}
        assert client.post(OVERRIDES, json=body, headers=AUTH).status_code == 200
    for query in ("kind=pin,exclude", "kind=pin&kind=exclude"):
        found = client.get(f"{OVERRIDES}?{query}", headers=AUTH).get_json()["overrides"]
        assert [o["kind"] for o in found] == ["pin"]
    found = client.get(f"{OVERRIDES}?kind=block,pin", headers=AUTH).get_json()["overrides"]
    assert len(found) == 3


def test_every_list_parameter_is_split(settings: Settings) -> None:
    """LIST_PARAMETERS names every list of every query model (and their other spellings)."""
    models = build_models(settings)
    lists = set()
    for model in (models.related_query, models.feed_query, OverridesQuery, DemoQuery):
        aliases = getattr(model, "ALIASES", {})
        for name, field in model.model_fields.items():
            if get_origin(field.annotation) is list:
                lists |= {name, *(a for a, n in aliases.items() if n == name)}
    assert lists == LIST_PARAMETERS
