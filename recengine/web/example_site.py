"""The demo's example site: another origin embedding the widget exactly as the README shows.

``recengine demo`` serves it on a second port (the service's port + 1), so the demo shows the
widget working across origins as on a real site: the page loads ``<service>/widget.js``, the
widget calls ``<service>/api/v1/articles/<id>/related``, and the service allows this origin by
CORS (the demo adds it to ``web.cors_origins``). It stands for a site's own article pages: it
shows the article (a real site has its own copy; this one reads the same database) and embeds
the widget with the README's two lines, nothing more; the related links are the articles'
``url`` (the demo corpus stores site-relative ones, ``/?article=<id>``), resolved against this
site, so a click stays on it.

:func:`create_demo_app` is what gunicorn runs for the demo: requests reaching the site's port go
to the example site, the others to the service.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

from flask import Flask, render_template, request
from flask.typing import ResponseReturnValue

from recengine.config import Settings
from recengine.storage.db import make_engine, make_session_factory
from recengine.storage.rows.articles import get_article
from recengine.text.cleaning.clean import readable
from recengine.text.cleaning.paragraphs import paragraphs
from recengine.web.app import create_app
from recengine.web.pages.demo import EXAMPLE_SITE, opening

MAX_PARAGRAPHS = 40


def create_example_site(settings: Settings, service: str) -> Flask:
    """The example site's app; ``service`` is the origin of recengine (``http://host:port``)."""
    app = Flask(__name__, static_folder="pages/static", template_folder="pages/templates")
    factory = make_session_factory(make_engine(settings.resolved_database_url, create=False))
    chosen = settings.web.demo_article

    @app.get("/")
    def article_page() -> ResponseReturnValue:
        with factory() as session:
            wanted = request.args.get("article") or opening(session, chosen)
            article = get_article(session=session, external_id=wanted) if wanted else None
            shown = paragraphs(readable(article.content))[:MAX_PARAGRAPHS] if article else []
        snippet = (
            f'<div data-recengine-article="{article.external_id}"></div>\n'
            f'<script src="{service}/widget.js" defer></script>'
            if article is not None
            else ""
        )
        page = render_template(
            "example_site.html",
            article=article,
            paragraphs=shown,
            service=service,
            snippet=snippet,
        )
        return page, 200 if article is not None else 404

    @app.after_request
    def headers(response: Any) -> Any:
        # This page may run the widget from the service, and the widget may call it and link
        # its stylesheet; thumbnails come from any http(s) site: nothing else, no inline
        # script or style (the same policy a real site would set for an embed).
        response.headers["Content-Security-Policy"] = (
            f"default-src 'none'; script-src {service}; connect-src {service}; "
            f"style-src 'self' {service}; img-src 'self' data: https: http:; base-uri 'none'"
        )
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response

    return app


def example_origins(site: str) -> tuple[str, ...]:
    """The origins a browser may give the example site: its address, and localhost for it."""
    parts = urlsplit(site)
    hosts = {parts.hostname or "127.0.0.1", "127.0.0.1", "localhost"}
    return tuple(sorted(f"{parts.scheme}://{host}:{parts.port}" for host in hosts))


class ByPort:
    """WSGI: a request that reached the site's port goes to the site, any other to the service.

    (gunicorn's ``SERVER_PORT`` is the port of the listener that accepted the connection.) It
    shows the service's ``extensions``, so recengine's worker finds the service's settings.
    """

    def __init__(self, service: Flask, site: Flask, site_port: int) -> None:
        self.service, self.site, self.site_port = service, site, str(site_port)
        self.extensions = service.extensions

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        app = self.site if environ.get("SERVER_PORT") == self.site_port else self.service
        return app(environ, start_response)


def create_demo_app(settings: Settings, service: str, site: str) -> ByPort:
    """The demo's WSGI app: the service at ``service``, the example site at ``site`` (origins).

    The service allows the site's origins by CORS and links each article to its copy there.
    """
    web = settings.web
    origins = tuple(dict.fromkeys((*web.cors_origins, *example_origins(site))))
    allowed = settings.model_copy(update={"web": web.model_copy(update={"cors_origins": origins})})
    app = create_app(allowed)
    app.config[EXAMPLE_SITE] = site
    port = urlsplit(site).port
    return ByPort(app, create_example_site(settings, service), port or 80)
