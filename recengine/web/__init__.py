"""The HTTP edge: the app factory, the API, recengine's own server, the pages.

* :mod:`.app` builds the Flask app (``create_app``), :mod:`.services` what its views share
  (settings, database, one session per request), :mod:`.metrics` / :mod:`.monitoring` the
  Prometheus figures, :mod:`.example_site` the demo's second origin;
* :mod:`.api`: the views and their plumbing (keys, paths, errors, CORS, cacheable answers);
* :mod:`.schemas`: the pydantic models that validate requests and publish ``/openapi.json``;
* :mod:`.server`: the gunicorn worker and everything it owns (event loop, parsing, shedding);
* :mod:`.pages`: what a browser loads (the demo page, the widget, static files).

``server`` and ``pages`` import ``api``; ``api`` imports ``schemas`` and ``services``, never
``server`` or ``pages``. Only :mod:`.api.errors` knows HTTP status codes.
"""

from recengine.web.app import create_app

__all__ = ["create_app"]
