"""Diversity (``related.diversity``, maximal marginal relevance): the greedy choice against a
brute-force reference, and lists and feeds of a tiny corpus reordered exactly as the formula
says (scores from the list itself, cosines of the stored vectors)."""

from __future__ import annotations

import itertools
import random
from typing import Any

import numpy as np
import pytest
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.recommend.feed import ReaderFeeds
from recengine.recommend.live import LiveIndex
from recengine.recommend.related import RelatedArticles
from recengine.recommend.signals.diversity import mmr_order
from recengine.storage.rows.index_source import internal_ids
from tests.overrides_helpers import add
from tests.recommend.signals.corpus import article, ask, service, with_related
from tests.templates import load


def reference(scores: list[float], sims: np.ndarray, d: float, fixed: int = 0) -> list[int]:
    """MMR as written in the papers: at each step, over every item not chosen yet, the value
    ``(1 - d) * score - d * max sim to the chosen`` (0 with none chosen); the best, the first
    one on equal values."""
    chosen = list(range(fixed))
    while len(chosen) < len(scores):
        values = {
            i: (1 - d) * scores[i] - d * max((sims[i][j] for j in chosen), default=0.0)
            for i in range(len(scores))
            if i not in chosen
        }
        best = max(values.values())
        chosen.append(min(i for i, v in values.items() if v == best))
    return chosen


def test_the_greedy_choice_matches_the_formula_on_small_random_lists() -> None:
    rng = random.Random(3)
    for m, d, fixed in itertools.product((1, 2, 5, 9), (0.0, 0.3, 0.7, 1.0), (0, 2)):
        scores = sorted((round(rng.random(), 2) for _ in range(m)), reverse=True)
        x = np.array([[rng.random() for _ in range(4)] for _ in range(m)])
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        sims = np.round(x @ x.T, 2)  # rounded: equal values happen, ties are tested too
        assert mmr_order(scores, sims, d, fixed) == reference(scores, sims, d, min(fixed, m))
    # d = 0 keeps the ranking; pins (fixed) never move
    assert mmr_order([0.5, 0.4, 0.3], np.eye(3), 0.0) == [0, 1, 2]
    assert mmr_order([0.1, 0.2, 0.9], np.eye(3), 0.2, fixed=2)[:2] == [0, 1]
    with pytest.raises(ValueError, match="diversity"):
        mmr_order([0.5], np.eye(1), 1.5)


CORPUS = [
    article("q", ("index", "plan", "tx", "ops"), None),
    article("twin-1", ("index", "plan", "a", "c"), None),  # close to q and to each other
    article("twin-2", ("index", "plan", "b", "d"), None),
    article("other", ("tx", "e", "f"), None),  # less close to q, unlike the twins
    article("third", ("cache", "split", "g"), None),
]


def cosines(related: RelatedArticles, factory: sessionmaker[Session], ids: list[str]) -> Any:
    """The pairwise cosines of the stored vectors of ``ids`` (from the index)."""
    with factory() as session:
        snap = related.index.current(session=session)
        internal = internal_ids(session=session, external_ids=ids)
    vectors = []
    for a in ids:
        where = snap.view.locate(internal[a])
        assert where is not None
        hashes, weights = snap.view.vector(*where)
        vectors.append(dict(zip(hashes.tolist(), weights.tolist(), strict=True)))
    return np.array(
        [[sum(w * v.get(h, 0.0) for h, w in u.items()) for v in vectors] for u in vectors]
    )


@pytest.fixture
def loaded(settings: Settings, factory: sessionmaker[Session], featurizer: Featurizer) -> Settings:
    load(factory, featurizer, CORPUS)
    return settings


def test_a_list_is_reordered_by_the_formula_and_pages_cut_the_same_list(
    loaded: Settings, factory: sessionmaker[Session]
) -> None:
    plain = ask(service(loaded, factory), factory, "q", min_score=0)["items"]
    ids = [i["id"] for i in plain]
    assert ids[:2] == ["twin-1", "twin-2"] and "other" in ids
    assert not ask(service(loaded, factory), factory, "q", min_score=0)["suppressed"]
    related = service(with_related(loaded, diversity=0.5), factory)
    sims = cosines(related, factory, ids)
    expected = [ids[i] for i in reference([i["score"] for i in plain], sims, 0.5)]
    assert expected[:2] == ["twin-1", "other"]  # the second twin gives way
    body = ask(related, factory, "q", min_score=0)
    assert [i["id"] for i in body["items"]] == expected
    # items keep their scores (only their order changes) and their reasons
    assert {i["id"]: i["score"] for i in body["items"]} == {i["id"]: i["score"] for i in plain}
    pages = [ask(related, factory, "q", k=2, offset=n, min_score=0)["items"] for n in (0, 2, 4)]
    assert [i["id"] for page in pages for i in page] == expected


def test_a_feed_reorders_its_interest_by_the_formula(
    loaded: Settings, factory: sessionmaker[Session]
) -> None:
    unskipped = loaded.model_copy(
        update={"feed": loaded.feed.model_copy(update={"max_pair_similarity": 1.0})}
    )

    def feed(settings: Settings) -> list[dict[str, Any]]:
        feeds = ReaderFeeds(settings, LiveIndex(settings, factory, background=False))
        with factory() as session:
            items = feeds.feed("reader", session=session, k=10)["items"]
        return [i for i in items if not i["reasons"].get("fresh")]

    with factory() as session, session.begin():
        ReaderFeeds(loaded, LiveIndex(loaded, factory, background=False)).record_reads(
            "reader", ["q"], session=session
        )
    plain = feed(unskipped)
    ids = [i["id"] for i in plain]
    assert ids[:2] == ["twin-1", "twin-2"]
    sims = cosines(service(loaded, factory), factory, ids)
    expected = [ids[i] for i in reference([i["score"] for i in plain], sims, 0.5)]
    assert expected != ids
    assert [i["id"] for i in feed(with_related(unskipped, diversity=0.5))] == expected


def test_pins_stay_first_and_count_as_chosen(
    loaded: Settings, factory: sessionmaker[Session], featurizer: Featurizer
) -> None:
    """The pins kept (a pin that copies a pin above is suppressed, and is not one of them)
    stay first, and the reordering counts them as chosen."""
    twin = next(r for r in CORPUS if r["id"] == "twin-1")
    copy = {**twin, "id": "twin-1-copy", "content": twin["content"] + "\n（完）欢迎转载。"}
    Ingester(factory, featurizer).ingest_records([copy])
    add(factory, "pin", "q", "twin-1")
    add(factory, "pin", "q", "twin-1-copy")
    body = ask(service(loaded, factory), factory, "q", min_score=0)
    plain = body["items"]
    ids = [i["id"] for i in plain]
    assert ids[:2] == ["twin-1", "twin-2"] and plain[0]["reasons"]["pinned"]
    assert {s["id"]: s["duplicate_of"] for s in body["suppressed"]} == {"twin-1-copy": "twin-1"}
    related = service(with_related(loaded, diversity=0.5), factory)
    sims = cosines(related, factory, ids)
    expected = [ids[i] for i in reference([i["score"] for i in plain], sims, 0.5, fixed=1)]
    assert expected[:2] == ["twin-1", "other"]  # twin-2 gives way to the pin's likeness
    assert [i["id"] for i in ask(related, factory, "q", min_score=0)["items"]] == expected
