"""The application factory: settings in, a wired Flask app out.

``create_app(settings)`` builds everything a worker needs (database engine, request models
with this deployment's limits, the OpenAPI generator, error handlers, CORS) and nothing happens
at import time. gunicorn calls it once per worker (``recengine serve``, or
``gunicorn 'recengine.web:create_app()'``, which reads settings from the environment).
"""

from __future__ import annotations

import os

from flask import Flask, Response, request
from spectree import SecurityScheme, SecuritySchemeData
from spectree.models import SecureType

from recengine.config import Settings, load_settings
from recengine.errors import InvalidRequest
from recengine.storage.db import make_engine, make_session_factory
from recengine.storage.migrate import check_schema
from recengine.text.words.tokenize import Tokenizer
from recengine.web import monitoring
from recengine.web.api import articles, cors, errors, feedback, health, overrides, users
from recengine.web.api.answers import CachedReads
from recengine.web.api.auth import ApiJSONProvider, ApiRequest
from recengine.web.api.feedback import BeaconBodies
from recengine.web.api.paths import AsciiIntConverter, IdConverter, IdPaths
from recengine.web.api.routing import ApiPlugin, ApiSpec, Router
from recengine.web.pages import views as pages
from recengine.web.schemas.core import ErrorBody, build_models
from recengine.web.schemas.editorial import build_editorial_models
from recengine.web.server.http import deadline
from recengine.web.services import Services, package_version
from recengine.web.services import init_app as init_services

# Pages: only this origin's scripts, styles and API; no inline script, no plugins, no framing
# by other sites. Stored text is escaped anyway; this is the second line of defence. Images
# may come from any http(s) site (the thumbnails of related articles are often on a CDN).
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data: https: http:; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'self'"
)


def create_app(settings: Settings | None = None, *, tokenizer: Tokenizer | None = None) -> Flask:
    """Build the service for ``settings`` (read from files and environment when omitted).

    Args:
        settings: every setting; tests pass their own.
        tokenizer: an already loaded tokenizer to share (else loaded on the first write).

    Raises:
        SchemaOutOfDate: the database has no schema or an old one (run `recengine db upgrade`).
    """
    settings = settings or load_settings()
    # web/pages: what a browser loads
    app = Flask(__name__, static_folder="pages/static", template_folder="pages/templates")
    app.request_class = ApiRequest
    app.json = ApiJSONProvider(app)
    app.config["MAX_CONTENT_LENGTH"] = settings.web.max_body_bytes
    app.url_map.converters["id"] = IdConverter
    app.url_map.converters["int"] = AsciiIntConverter
    engine = make_engine(settings.resolved_database_url, create=False)
    check_schema(engine)
    models = build_models(settings)
    services = Services(settings, engine, make_session_factory(engine), models, tokenizer)
    app.wsgi_app = CachedReads(  # type: ignore[method-assign]
        IdPaths(BeaconBodies(app.wsgi_app)), services
    )
    init_services(app, services)
    deadline.init_app(app, services)
    errors.init_app(app)
    router = Router(app, _spec(), settings)
    articles.init_app(router, models)
    users.init_app(router, models)
    overrides.init_app(router)
    feedback.init_app(router, build_editorial_models(settings, services.variants.names))
    health.init_app(router)
    pages.init_app(router)
    monitoring.init_app(router, services)
    app.after_request(_headers)
    cors.init_app(app, settings.web.cors_origins)
    return app


def _spec() -> ApiSpec:
    return ApiSpec(
        "flask",
        backend=ApiPlugin,
        title="recengine",
        version=package_version(),
        description="Related articles without near-duplicates, for article sites.",
        page_templates={},  # no documentation UI: it would load scripts from a CDN
        annotations=False,  # views read validated input with routing.validated_body/query
        security_schemes=[
            SecurityScheme(
                name="bearer", data=SecuritySchemeData(type=SecureType.HTTP, scheme="bearer")
            )
        ],
        validation_error_status=errors.status_of(InvalidRequest),
        validation_error_model=ErrorBody,
        before=errors.validation_hook,
        after=errors.response_hook,
        naming_strategy=lambda model: model.__name__,
        nested_naming_strategy=lambda _parent, child: child,
    )


def _headers(response: Response) -> Response:
    response.headers["X-Content-Type-Options"] = "nosniff"
    if request.path.startswith("/api/") and "Cache-Control" not in response.headers:
        response.cache_control.no_store = True  # writes, errors, per-reader answers
    response.headers["X-Recengine-Worker"] = str(os.getpid())
    if response.mimetype == "text/html":
        response.headers["Content-Security-Policy"] = CSP
        response.headers["Referrer-Policy"] = "same-origin"
    return response
