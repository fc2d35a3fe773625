"""gunicorn's settings for recengine: one place for ``recengine serve`` and plain gunicorn.

``recengine serve`` passes :func:`options` to gunicorn; plain gunicorn reads the same through
``gunicorn -c python:recengine.web.gunicorn_conf 'recengine.web:create_app()'`` (options given
on gunicorn's command line still win). Either way the worker is :class:`recengine.web.worker.
Worker`, which bounds how long a client may take to send a request, sheds load and cuts long
requests; gunicorn's own workers (sync, gthread) do none of that.
"""

from __future__ import annotations

from typing import Any

from recengine.config import Settings

WORKER_CLASS = "recengine.web.worker.Worker"


def options(settings: Settings) -> dict[str, Any]:
    """gunicorn settings (by gunicorn's names) for the ``[web]`` settings."""
    web = settings.web
    return {
        "bind": [f"{bind_host(web.host)}:{web.port}"],
        "workers": web.workers,
        "threads": web.threads,
        "worker_class": WORKER_CLASS,
        # The request deadline (the worker cuts a longer request) and the heartbeat: the
        # worker's loop reports every second, so only a loop that stopped is killed.
        "timeout": web.timeout_seconds,
        "graceful_timeout": 10,
        "keepalive": web.keepalive_seconds,
        "limit_request_line": 8190,  # gunicorn's maximum: long filter lists fit in a URL
    }


def bind_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
