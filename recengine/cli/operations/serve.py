"""``recengine serve``: the HTTP API, widget and demo page under gunicorn, several workers.

gunicorn's master process binds the socket and forks ``--workers`` processes; each builds its
own app with ``recengine.web:create_app(settings)`` (named by string: ``cli`` and ``web`` are
separate edges and never import each other) and serves with ``--threads`` threads in
recengine's worker (``recengine.web.server.worker``: requests are read whole on an event loop before
a thread runs them, overload is shed, long requests are cut; ``recengine.web.server.settings`` holds
the gunicorn settings, shared with ``gunicorn -c python:recengine.web.server.gunicorn_conf``). Every
worker reads the same database, so a write through one is visible to all (each worker's
related-articles index catches up with SQL before it answers, ``index.sync_interval_s``).
"""

from __future__ import annotations

import errno
import importlib
import os
import socket
import time
from collections.abc import Callable
from typing import Any

import click
from gunicorn.app.base import BaseApplication

from recengine.cli.context import CliContext
from recengine.cli.params import Integer
from recengine.config import Settings
from recengine.errors import ConfigError
from recengine.storage.migrate import check_schema

APP_FACTORY = "recengine.web:create_app"
DEMO_FACTORY = "recengine.web.example_site:create_demo_app"
# by name: cli and web do not import each other
SERVER_OPTIONS = "recengine.web.server.settings:options"
BIND_RETRY_S = 0.1


class Server(BaseApplication):  # type: ignore[misc]
    """gunicorn, configured from arguments instead of its command line.

    With ``example_site``, the demo's: a second listener serves the example site (another
    origin embedding the widget); its origin is known once gunicorn has bound the sockets
    (``when_ready``, in the master, before the workers are forked and load the app).
    """

    def __init__(self, settings: Settings, options: dict[str, Any]) -> None:
        self.settings = settings
        self.options = options
        self.origins: tuple[str, str] | None = None  # (service, example site), for the demo
        super().__init__()

    def load_config(self) -> None:
        for key, value in self.options.items():
            self.cfg.set(key, value)
        if "control_socket_disable" in self.cfg.settings:
            # gunicorn >= 25 opens a control socket in $HOME by default; one per user, so two
            # servers (or a test run next to a demo) would fight over it. Nothing here uses it.
            self.cfg.set("control_socket_disable", True)

    def load(self) -> Any:
        if self.origins is not None:
            module, name = DEMO_FACTORY.split(":")
            return getattr(importlib.import_module(module), name)(self.settings, *self.origins)
        return _named(APP_FACTORY)(self.settings)


def _named(target: str) -> Callable[[Settings], Any]:
    module, name = target.split(":")
    found: Callable[[Settings], Any] = getattr(importlib.import_module(module), name)
    return found


def run(ctx: CliContext, announce: str = "serving", *, example_site: bool = False) -> None:
    """Check the schema, then run gunicorn in the foreground until interrupted.

    Args:
        announce: the first words of the line that gives the URL.
        example_site: also serve the demo's example site on the next port (``port + 1``; any
            free port with ``--port 0``).

    Raises:
        SchemaOutOfDate: before any worker starts, so the message is one line, not a crash loop.
        ConfigError: a port is in use.
    """
    check_schema(ctx.engine)
    ctx.engine.dispose()  # workers are forked: none may inherit an open connection
    web = ctx.settings.web
    check_ports(web.host, web.port, example_site=example_site, wait=web.bind_wait_seconds)
    options = {**_named(SERVER_OPTIONS)(ctx.settings), "proc_name": "recengine"}
    if example_site:
        site_port = web.port + 1 if web.port else 0
        options["bind"] = [*options["bind"], f"{options['bind'][0].rsplit(':', 1)[0]}:{site_port}"]
    server = Server(ctx.settings, options)

    def when_ready(arbiter: Any) -> None:
        service, *others = (_origin(listener) for listener in arbiter.LISTENERS)
        click.echo(f"{announce} on {service}/ ({web.workers} workers)")
        if example_site and others:
            server.origins = (service, others[0])
            click.echo(
                f"the widget on another site (an example page of another origin, embedding it "
                f"with the README's two lines): {others[0]}/"
            )
        click.echo("press Ctrl-C to stop")

    server.cfg.set("when_ready", when_ready)
    server.run()


def _origin(listener: Any) -> str:
    host, port = listener.getsockname()[:2]
    return f"http://{_display(host)}:{port}"


def check_ports(host: str, port: int, *, example_site: bool = False, wait: float = 0.0) -> None:
    """Fail at once, with the fix, when a port is taken (gunicorn would retry for seconds and
    say less), after waiting up to ``wait`` seconds for it to be released: a server stopped or
    killed a moment ago may still hold it (its workers answering their last requests).

    Args:
        example_site: the demo's: ``port + 1`` is needed too, for its example site.
        wait: seconds to wait for a port in use (``web.bind_wait_seconds``), saying so.

    Raises:
        ConfigError: an address is in use (still, after ``wait``) or cannot be listened on; for
            one in use the message suggests a port (a pair for the demo) that is free now.
    """
    if port == 0:  # any free port (and any other for the example site)
        return
    if example_site and port == 65535:
        raise ConfigError("the demo takes --port and --port + 1: give a port below 65535")
    wanted = (port, port + 1) if example_site else (port,)
    for taken in wanted:
        problem = _released(host, taken, wait)
        if problem is None:
            continue
        if problem != errno.EADDRINUSE:
            raise ConfigError(f"cannot listen on {host}:{taken}: {os.strerror(problem)}")
        whose = " (the demo's example site takes --port + 1)" if taken != port else ""
        waited = f"; still after {wait:g} s" if wait > 0 else ""
        raise ConfigError(
            f"port {taken} on {host} is in use (another server?{waited}){whose}: "
            f"{_suggestion(host, port, len(wanted))}or --port 0 for any free port"
        )


def _released(host: str, port: int, wait: float) -> int | None:
    """:func:`_bind_problem` of ``host:port``, after waiting up to ``wait`` seconds (saying so)
    while the port is in use."""
    problem = _bind_problem(host, port)
    if problem != errno.EADDRINUSE or wait <= 0:
        return problem
    click.echo(
        f"port {port} on {host} is in use: waiting up to {wait:g} s for it to be released"
        " (a server stopped a moment ago may still hold it; web.bind_wait_seconds)",
        err=True,
    )
    deadline = time.monotonic() + wait
    while problem == errno.EADDRINUSE and time.monotonic() < deadline:
        time.sleep(BIND_RETRY_S)
        problem = _bind_problem(host, port)
    return problem


def _suggestion(host: str, port: int, needed: int) -> str:
    """``try --port N, `` with the first N above ``port`` whose ``needed`` ports are free now."""
    for start in range(port + 1, min(port + 200, 65536 - needed)):
        if all(_bind_problem(host, p) is None for p in range(start, start + needed)):
            pair = f" (free now, with {start + 1} for the example site)" if needed > 1 else ""
            return f"try --port {start}{pair}, "
    return ""


def _bind_problem(host: str, port: int) -> int | None:
    """The errno of binding ``host:port`` as gunicorn does, or None when it can be bound."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host.strip("[]"), port))
        except OSError as exc:
            return exc.errno or errno.EINVAL
    return None


def _display(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def with_server_options(settings_of: Callable[..., Any]) -> Callable[..., Any]:
    """--host, --port, --workers, --threads; each overrides the setting of the same name."""
    for option in reversed(
        (
            click.option("--host", default=None, help="Address to listen on [web.host]."),
            click.option(
                "--port",
                type=Integer(0, 65535),
                default=None,
                help="Port [web.port]; 0 picks a free one.",
            ),
            click.option(
                "--workers",
                type=Integer(1, 64),
                default=None,
                help="Worker processes [web.workers].",
            ),
            click.option(
                "--threads",
                type=Integer(1, 64),
                default=None,
                help="Threads per worker [web.server.threads].",
            ),
        )
    ):
        settings_of = option(settings_of)
    return settings_of


def server_settings(settings: Settings, **given: Any) -> Settings:
    """``settings`` with the --host/--port/--workers/--threads given on the command line."""
    update = {k: v for k, v in given.items() if v is not None}
    return settings.model_copy(update={"web": settings.web.model_copy(update=update)})


@click.command()
@with_server_options
@click.pass_obj
def serve(ctx: CliContext, /, **server: Any) -> None:
    """Serve the HTTP API, /widget.js and the demo page with gunicorn."""
    run(CliContext(server_settings(ctx.settings, **server)))
