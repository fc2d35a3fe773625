"""Cards (what a list shows of an article) derived and stored at ingest, on both databases."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from recengine.pipeline.cards import card_rule
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.storage.models import Article
from tests.factories import record

LONG = "第一句在这里。" + "这是一段很长的正文，它会超过卡片摘要的长度限制。" * 10


def cards(factory: sessionmaker[Session]) -> dict[str, tuple[Any, ...]]:
    with factory() as session:
        rows = session.execute(
            select(
                Article.external_id,
                Article.image,
                Article.summary,
                Article.card_image,
                Article.card_summary,
                Article.card_rule,
            )
        ).all()
    return {r[0]: tuple(r[1:]) for r in rows}


def test_ingest_stores_each_articles_card(
    factory: sessionmaker[Session], featurizer: Featurizer
) -> None:
    records = [
        # the given image and summary win (the summary's markup removed)
        record(
            "given",
            id="given",
            content=LONG,
            image="https://cdn.example/a.jpg",
            summary="<b>Mine.</b>",
        ),
        # none given: the content's first loadable image, a summary cut at a sentence end
        record(
            "derived",
            id="derived",
            url="https://blog.example/2024/derived.html",
            content='<p>x</p><img src="data:image/gif;base64,R0l"><img src="pics/b.png">' + LONG,
        ),
        # a given image no page may load: the content's image instead
        record(
            "hostile",
            id="hostile",
            image="javascript:alert(1)",
            content='<img src="/c.png">' + LONG,
        ),
        record("plain", id="plain", content="No image at all. " + "Words follow here. " * 20),
    ]
    summary = Ingester(factory, featurizer).ingest_records(records)
    assert summary.inserted == 4
    rule = card_rule(featurizer.settings.ingest.summary_chars)
    found = cards(factory)
    assert found["given"] == ("https://cdn.example/a.jpg", "<b>Mine.</b>", *found["given"][2:])
    assert found["given"][2:] == ("https://cdn.example/a.jpg", "Mine.", rule)
    image, text, stored_rule = found["derived"][2:]
    assert image == "https://blog.example/2024/pics/b.png"
    assert text.startswith("x 第一句在这里。") and text.endswith("。") and len(text) <= 120
    assert stored_rule == rule
    assert found["hostile"][0] == "javascript:alert(1)"  # stored as given
    assert found["hostile"][2] == "/c.png"
    assert found["plain"][2] is None and found["plain"][3].startswith("No image at all.")


def test_a_new_image_rewrites_the_card_without_new_features(
    factory: sessionmaker[Session], featurizer: Featurizer
) -> None:
    ingester = Ingester(factory, featurizer)
    ingester.ingest_records([record("a", id="a", content=LONG)])
    again = ingester.ingest_records([record("a", id="a", content=LONG)])
    assert again.unchanged == 1
    changed = ingester.ingest_records([record("a", id="a", content=LONG, image="/new.png")])
    assert changed.updated == 1
    assert cards(factory)["a"][2] == "/new.png"
