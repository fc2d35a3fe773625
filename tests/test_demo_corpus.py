"""The demo corpus as records: no sentiment labels shown as tags, real line breaks, and a
site-relative url the widget resolves against whichever site embeds it."""

from __future__ import annotations

from recengine.pipeline.demo_corpus import OPENING, inews_records


def test_demo_records_have_no_sentiment_tags_and_a_relative_url() -> None:
    records = list(inews_records(limit=50))
    assert len(records) == 50
    for r in records:
        assert "tags" not in r and "category" not in r  # the package's label is sentiment
        assert r["url"] == f"/?article={r['id']}"
        assert "\\n" not in r["content"]  # escaped line breaks made real ones


def test_the_opening_article_is_in_the_corpus() -> None:
    split, index = OPENING.removeprefix("inews-").split("-")
    assert split == "train"
    ids = {r["id"] for r in inews_records(limit=int(index) + 1)}
    assert OPENING in ids
