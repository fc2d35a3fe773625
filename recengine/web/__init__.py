"""The HTTP edge: Flask app factory, API views, the widget and the demo page.

Parses requests, owns one session per request, formats responses; the work is done by
``pipeline`` (writes) and ``recommend`` (reads). Only ``web/errors.py`` knows HTTP codes.
"""

from recengine.web.app import create_app

__all__ = ["create_app"]
