"""What a browser loads: the demo page ``/`` (``demo_page``), ``/widget.js``, ``/widget.css``,
``/openapi.json``."""

from __future__ import annotations

from pathlib import Path

from flask import current_app, jsonify, request
from flask.typing import ResponseReturnValue
from spectree import SpecTree

from recengine.errors import NotFound
from recengine.web.api.routing import Router
from recengine.web.pages import demo
from recengine.web.pages.assets import served
from recengine.web.services import services

SPEC = "recengine.spec"
WIDGET_MAX_AGE = 300


SPLIT_LINE = b"var SPLIT = true; /* recengine:split */"


def widget() -> ResponseReturnValue:
    """The embeddable related-articles widget (JavaScript, no dependencies).

    It says whether an A/B test of related lists runs here: only then do its list requests
    carry a reader or session id (otherwise every reader of a page asks for the same URL, and
    a shared cache answers them all). The script is cacheable for ``WIDGET_MAX_AGE``: a test
    started or stopped reaches the widgets within that time (a list asked for without an id
    meanwhile gets the control variant).
    """
    script = served(Path(current_app.static_folder or "", "widget.js"))
    if not services().variants.splits:
        script = script.replace(SPLIT_LINE, SPLIT_LINE.replace(b"true", b"false"))
    return _asset(script, "text/javascript")


def widget_css() -> ResponseReturnValue:
    """The widget's stylesheet, linked by the script (layouts list, cards and grid; themable
    with CSS custom properties, see its opening comment). Cacheable as the script is."""
    return _asset(served(Path(current_app.static_folder or "", "widget.css")), "text/css")


def _asset(body: bytes, mimetype: str) -> ResponseReturnValue:
    response = current_app.response_class(body, mimetype=mimetype)
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
        demo.demo,
        method="GET",
        write=False,
        tag="pages",
        ok=None,
        query=demo.DemoQuery,
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
        "/widget.css",
        widget_css,
        method="GET",
        write=None,
        tag="service",
        ok=None,
        ok_description="The widget's stylesheet (CSS).",
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
