"""recengine's gunicorn worker and everything it owns.

:mod:`.worker` runs an event loop per worker; :mod:`.http` reads, parses, sheds and answers
requests on it (or hands them to :mod:`.threads`); :mod:`.connections` caps the connections a
worker holds; :mod:`.parent` stops a worker whose master died; :mod:`.collector` keeps full
garbage collections short; :mod:`.logs` writes access lines; :mod:`.settings` (with
:mod:`.gunicorn_conf`) is gunicorn's configuration. The server imports the API's plumbing
(``web.api``), never a use case's internals.
"""
