"""What a browser loads: the demo page ``/``, the widget ``/widget.js``, ``/openapi.json``.

The demo page is rendered by Jinja with autoescaping: every stored text (titles, content, tags)
is inserted as text, never as markup, and the page's Content-Security-Policy allows only this
origin's script and style, so even a stored ``<script>`` could not run.
"""

from __future__ import annotations

import re
from itertools import islice
from pathlib import Path

from flask import current_app, jsonify, render_template, request
from flask.typing import ResponseReturnValue
from pydantic import BaseModel, Field
from spectree import SpecTree
from sqlalchemy.orm import Session

from recengine.errors import NotFound
from recengine.recommend.duplicates import clusters, duplicates_of
from recengine.storage.articles import get_article, latest_articles, titles_of
from recengine.text.clean import clean
from recengine.web.errors import status_of
from recengine.web.routing import Router, validated_query
from recengine.web.schemas import ExternalId
from recengine.web.services import services, session

SPEC = "recengine.spec"
MAX_PARAGRAPHS = 80
LATEST = 15
WIDGET_MAX_AGE = 300
_HTTP_URL = re.compile(r"^https?://", re.IGNORECASE)


class DemoQuery(BaseModel):
    article: ExternalId | None = Field(None, description="The article to show (default: latest).")


def demo() -> ResponseReturnValue:
    """The demo site: an article, its related-articles widget and, for editors, its duplicates."""
    query = validated_query(DemoQuery)
    current = session()
    latest = latest_articles(session=current, limit=LATEST)
    clustered, biggest = _clustered(current)
    wanted = query.article or biggest or (latest[0].external_id if latest else None)
    article = get_article(session=current, external_id=wanted) if wanted else None
    found = (
        duplicates_of(
            session=current,
            external_id=wanted,
            criterion=services().criterion,
            text=services().text,
        )
        if article is not None and wanted is not None
        else None
    )
    shown = [d.id for d in found.duplicates] if found else []
    lines = clean(article.content).splitlines() if article else []
    page = render_template(
        "demo.html",
        article=article,
        paragraphs=lines[:MAX_PARAGRAPHS],
        truncated=len(lines) > MAX_PARAGRAPHS,
        safe_url=article.url if article and article.url and _HTTP_URL.match(article.url) else None,
        duplicates=found,
        titles=titles_of(session=current, external_ids=[*clustered, *shown]),
        with_duplicates=clustered,
        latest=latest,
    )
    if query.article and article is None:
        return page, status_of(NotFound)
    return page


def _clustered(current: Session) -> tuple[list[str], str | None]:
    """Canonical ids of the first clusters, and the one with most copies (the default page)."""
    found = list(islice(clusters(session=current), LATEST))
    biggest = max(found, key=lambda c: len(c["members"]), default=None)
    return [c["canonical"] for c in found], biggest["canonical"] if biggest else None


def widget() -> ResponseReturnValue:
    """The embeddable related-articles widget (JavaScript, no dependencies)."""
    script = Path(current_app.static_folder or "", "widget.js").read_bytes()
    response = current_app.response_class(script, mimetype="text/javascript")
    response.cache_control.public = True
    response.cache_control.max_age = WIDGET_MAX_AGE
    response.add_etag()
    return response.make_conditional(request)


def openapi() -> ResponseReturnValue:
    """This service's OpenAPI 3.1 document, generated from the models that validate requests."""
    api: SpecTree = current_app.extensions[SPEC]
    return jsonify(api.spec)


def init_app(router: Router) -> None:
    router.app.extensions[SPEC] = router.api
    router.add(
        "/",
        demo,
        method="GET",
        write=False,
        tag="pages",
        ok=None,
        query=DemoQuery,
        errors=(NotFound,),
        ok_description="The demo page (HTML).",
        html=True,
    )
    router.add(
        "/widget.js",
        widget,
        method="GET",
        write=None,
        tag="service",
        ok=None,
        ok_description="The widget script (JavaScript).",
    )
    router.add(
        "/openapi.json",
        openapi,
        method="GET",
        write=None,
        tag="service",
        ok=None,
        ok_description="This document.",
    )
