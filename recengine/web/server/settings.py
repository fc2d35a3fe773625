"""gunicorn's settings for recengine: one place for ``recengine serve`` and plain gunicorn.

``recengine serve`` passes :func:`options` to gunicorn; plain gunicorn reads the same through
``gunicorn -c python:recengine.web.server.gunicorn_conf 'recengine.web:create_app()'`` (options
given on gunicorn's command line still win). Either way the worker is
:class:`recengine.web.server.worker. Worker`, which bounds how long a client may take to send a
request, sheds load and cuts long requests; gunicorn's own workers (sync, gthread) do none of that.
"""

from __future__ import annotations

import shutil
from typing import Any

from recengine.config import Settings
from recengine.web.metrics import prepare_directory, worker_exited

WORKER_CLASS = "recengine.web.server.worker.Worker"
JSON_LOGGER = "recengine.web.server.logs.JsonLogger"
LISTEN_BACKLOG = 4096


def options(settings: Settings) -> dict[str, Any]:
    """gunicorn settings (by gunicorn's names) for the ``[web]`` settings."""
    web = settings.web
    hooks = _metrics_hooks(settings) if settings.metrics.enabled else {}
    logs: dict[str, Any] = {"accesslog": "-"} if settings.log.access else {}
    if settings.log.format == "json":
        logs["logger_class"] = JSON_LOGGER
    return {
        **hooks,
        **logs,
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
        "worker_connections": web.max_connections,
        # connections not yet accepted wait here (gunicorn's default 2,048): a burst or a flood
        # waits rather than being refused; the kernel caps it at net.core.somaxconn
        "backlog": LISTEN_BACKLOG,
    }


def bind_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _metrics_hooks(settings: Settings) -> dict[str, Any]:
    """The master names the metrics directory before forking and removes it on exit; a worker
    that exits leaves its live gauges (``recengine.web.metrics``)."""
    made: list[Any] = []

    def on_starting(_server: Any) -> None:
        made.append(prepare_directory(settings.data_dir))

    def child_exit(_server: Any, worker: Any) -> None:
        worker_exited(worker.pid)

    def on_exit(_server: Any) -> None:
        for directory in made:
            if directory is not None:
                shutil.rmtree(directory, ignore_errors=True)

    return {"on_starting": on_starting, "child_exit": child_exit, "on_exit": on_exit}
