"""Numbers and text in paths and query strings, as sent by hand and by programs (issue 45,
items 22-23; issue 46, item 12), on SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient

from recengine.errors import InvalidRequest
from recengine.recommend.params import check_int, check_score
from tests.web.conftest import AUTH
from tests.web.test_articles import assert_error

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
