"""The demo page ``/``: an article as a site shows it, its widget, and what suppression did.

What an editor shows a colleague: the article in paragraphs, the related-articles widget under
it (the real widget, calling the API), and for editors what near-duplicate suppression did on
this page: the copies the widget's own list left out (the same request the widget sends) and
the article's duplicate cluster. ``/?article=<id>`` opens an article; without it, the page
opens on ``web.demo_article`` (``recengine demo`` sets a chosen one) or the latest article. An
unknown id is a 404 page saying so.

Rendered by Jinja with autoescaping: every stored text is inserted as text, never as markup, and
the Content-Security-Policy allows only this origin's script and style.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import islice
from typing import Any

from flask import current_app, render_template
from flask.typing import ResponseReturnValue
from pydantic import BaseModel, Field
from sqlalchemy.orm import Session

from recengine.config import Settings
from recengine.errors import ModelMissing, NotFound
from recengine.recommend.duplicates import DuplicatesOf, clusters, duplicates_of
from recengine.storage.models import Article
from recengine.storage.rows.articles import get_article, latest_articles, titles_of
from recengine.text.cleaning.clean import readable
from recengine.text.cleaning.paragraphs import paragraphs
from recengine.web.api.errors import status_of
from recengine.web.api.routing import validated_query
from recengine.web.schemas.core import ExternalId
from recengine.web.services import services, session

MAX_PARAGRAPHS = 80
LATEST = 15
WIDGET_K = 8  # what the page's widget asks for (data-recengine-k)
# The rules of the near-duplicate criterion as the editor view names them (recommend.lists.listing).
RULE_NAMES = {
    "resemblance": "文本相似度",
    "containment": "文本包含度",
    "cosine": "向量余弦",
    "editor": "编辑判定",
    "cluster": "同一重复组",
}
EXAMPLE_SITE = "RECENGINE_EXAMPLE_SITE"  # app.config: the demo's other origin, when it has one
_HTTP_URL = re.compile(r"^https?://", re.IGNORECASE)


class DemoQuery(BaseModel):
    article: ExternalId | None = Field(None, description="The article to show (default: latest).")


@dataclass(frozen=True)
class EditorView:
    """What suppression did on this page: the widget's list and the article's cluster."""

    suppressed: list[dict[str, Any]]  # as in the related body: id, duplicate_of, distance, rule...
    below_floor: int
    cluster: DuplicatesOf | None
    model_missing: bool


def demo() -> ResponseReturnValue:
    """The demo site: an article, its related-articles widget and, for editors, suppression."""
    query = validated_query(DemoQuery)
    current = session()
    latest = latest_articles(session=current, limit=LATEST)
    try:
        clustered = [c["canonical"] for c in islice(clusters(session=current), LATEST)]
    except ModelMissing:  # no clusters before the first model; the page says so
        clustered = []
    wanted = query.article or opening(current, services().settings.web.demo_article)
    article = get_article(session=current, external_id=wanted) if wanted else None
    editor = _editor_view(current, article) if article is not None else None
    ids = [*clustered, *_mentioned(editor)]
    shown = paragraphs(readable(article.content)) if article is not None else []
    page = render_template(
        "demo.html",
        article=article,
        missing=query.article if article is None else None,
        paragraphs=shown[:MAX_PARAGRAPHS],
        truncated=len(shown) > MAX_PARAGRAPHS,
        safe_url=_safe_url(article),
        editor=editor,
        rule_names=RULE_NAMES,
        titles=titles_of(session=current, external_ids=ids),
        with_duplicates=clustered,
        latest=latest,
        widget_k=WIDGET_K,
        example_site=current_app.config.get(EXAMPLE_SITE),
        open_writes=open_writes(services().settings),
    )
    if query.article and article is None:
        return page, status_of(NotFound)
    return page


def open_writes(settings: Settings) -> bool:
    """Writes need no key here (``allow_open_writes`` with no key configured: the demo): the
    editor view then works without one (any key sent would be refused)."""
    return settings.allow_open_writes and not settings.api_key


def opening(current: Session, chosen: str) -> str | None:
    """The article a page opens on: ``chosen`` (``web.demo_article``) when it is a live
    article (``recengine demo --limit`` may not have ingested it), else the latest article."""
    if chosen and get_article(session=current, external_id=chosen) is not None:
        return chosen
    latest = latest_articles(session=current, limit=1)
    return latest[0].external_id if latest else None


def _editor_view(current: Session, article: Article) -> EditorView:
    try:  # the very request the widget sends (same k, the server's relevance floor)
        body = services().related.related(article.external_id, session=current, k=WIDGET_K)
        suppressed, dropped, missing = body["suppressed"], body["floor"]["dropped"], False
    except ModelMissing:
        suppressed, dropped, missing = [], 0, True
    try:
        cluster: DuplicatesOf | None = duplicates_of(
            session=current,
            external_id=article.external_id,
            criterion=services().criterion,
            compared=services().compared,
        )
    except ModelMissing:
        cluster = None
    if cluster is not None and not cluster.duplicates:
        cluster = None
    return EditorView(suppressed, dropped, cluster, missing)


def _mentioned(editor: EditorView | None) -> list[str]:
    if editor is None:
        return []
    ids = [i for s in editor.suppressed for i in (s["id"], s["duplicate_of"], s["via"]) if i]
    if editor.cluster is not None:
        ids += [editor.cluster.canonical, *(d.id for d in editor.cluster.duplicates)]
    return ids


def _safe_url(article: Article | None) -> str | None:
    if article is None or not article.url or not _HTTP_URL.match(article.url):
        return None
    return article.url
