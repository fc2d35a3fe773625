"""A worker's answer cache kept exact under random writes: after each write, every answer of the
caching app, computed and then from its cache, is byte for byte the answer of an app without a
cache (status, body and ETag).

Its own file (``tests/web/api/test_answers.py`` holds the ETag and 304 tests): its four cases
are the longest HTTP test of the suite, and as a file of their own marked ``slow`` they start
first among ``scripts/test``'s workers instead of ending the run on one of them.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.web.api.test_answers import get, post, stats, unrelated
from tests.web.api.test_duplicates import repost
from tests.web.conftest import AUTH

# Rounds of (check every answer, then one random write). With 16, each seed below has made
# every kind of write (new, edit, retitle, delete, repost, unrelated), each kind has changed
# some checked answer (a cached answer kept across it would differ), and the duplicates path's
# answers have changed too (by a repost): seed 3 by round 15, seed 11 by round 15. The 8
# rounds the test had beyond them repeated kinds of write already seen, at a third of its
# cost (a cache that ignores the sequence fails at round 1 of either seed).
ROUNDS = 16


@pytest.fixture
def corpus_size() -> int:
    return 60


@pytest.mark.slow
@pytest.mark.parametrize("seed", [3, 11])
def test_cached_answers_equal_fresh_ones_through_random_writes(
    make_app: Callable[..., Flask], corpus: list[dict[str, Any]], seed: int
) -> None:
    """After every random write (new, mixed, edited, retitled, deleted, reposted, unrelated),
    each answer of the caching app is byte for byte the answer of an app without a cache."""
    cached = make_app()
    client = cached.test_client()
    plain = make_app(cache={"max_bytes": 0}).test_client()
    rnd = random.Random(seed)
    live = [r["id"] for r in corpus]
    paths = [
        f"/api/v1/articles/{{}}/related?k={k}&min_score={m}" for k, m in ((5, 0), (10, 0.05))
    ] + ["/api/v1/articles/{}/duplicates"]
    queries = rnd.sample(live, 12)
    for step in range(ROUNDS):
        for q in queries:
            for path in paths:
                b = get(plain, path.format(q))
                for _ in range(2):  # computed, then from the cache
                    a = get(client, path.format(q))
                    assert (a.status_code, a.data) == (b.status_code, b.data), (step, q, path)
                    if a.status_code == 200:
                        assert a.headers["ETag"] == b.headers["ETag"]
        _random_write(client, rnd, corpus, live, step)
    assert stats(cached).hits > 50 and stats(cached).resets >= ROUNDS  # it did work


def _random_write(
    client: FlaskClient, rnd: random.Random, corpus: list[dict[str, Any]], live: list[str], n: int
) -> None:
    kind = rnd.choice(["new", "edit", "retitle", "delete", "repost", "unrelated"])
    originals = [r for r in corpus if r["id"] in set(live)]  # records this test can rewrite
    base = rnd.choice(originals)
    other = rnd.choice(corpus)
    if kind == "new":
        content = base["content"][:1500] + "\n" + other["content"][:1500]
        post(client, {"id": f"new-{n}", "title": base["title"], "content": content})
        live.append(f"new-{n}")
    elif kind == "edit":
        post(client, {**base, "content": other["content"]})
    elif kind == "retitle":
        post(client, {**base, "title": base["title"] + f" {n}"})
    elif kind == "delete" and len(live) > 40:
        client.delete(f"/api/v1/articles/{base['id']}", headers=AUTH)
        live.remove(base["id"])
    elif kind == "repost":
        post(client, repost(base, f"copy-{n}"))
        live.append(f"copy-{n}")
    else:
        post(client, unrelated(n))
