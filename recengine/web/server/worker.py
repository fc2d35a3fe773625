"""recengine's gunicorn worker: slow clients cost no thread, overload is shed, long requests cut.

``recengine serve`` runs it; plain gunicorn gets it with
``gunicorn -c python:recengine.web.server.gunicorn_conf 'recengine.web:create_app()'``.

Why not gthread: its threads read the request from the socket, so 12 stalled uploads (or 16
half-sent headers) held every thread of a two-worker server and health checks timed out for
as long as the clients kept their connections; its ``timeout`` is a heartbeat of the worker's
main loop, which a thread stuck in a 90 s request does not stop, so nothing was cut. Here:

* an event loop per worker accepts connections and reads each request whole
  (:mod:`recengine.web.server.http.front`: ``web.header_timeout_seconds``,
  ``web.body_timeout_seconds``, 408 past them); only a complete request goes to one of ``threads``
  threads (:mod:`recengine.web.server.http.dispatch`), and the loop writes the answer back;
* some complete requests are answered by the loop itself, with no thread: stored answers whose
  index needs no check first (:mod:`recengine.web.server.http.hits`) and reader-feedback beacons
  (:mod:`recengine.web.api.feedback`), each with its access line;
* every request is parsed once, by gunicorn's parser, on the loop
(:mod:`recengine.web.server.http.parsing`):
  the loop's answers and the threads' are given the same request;
* a request waits at most ``web.queue_timeout_seconds`` (less while a queue stands), counted
  from when it reached the kernel, whichever path answers it
  (:mod:`recengine.web.server.http.admission` for the loop's own queue,
  :mod:`recengine.web.server.http.slots` for the threads'), else 503 ``overloaded`` with
  ``Retry-After``; health checks are exempt and have threads of their own (``HEALTH_THREADS``), and
  threads hand the interpreter lock back to the loop within 1 ms (``SWITCH_INTERVAL_S``);
* a request still running after ``timeout`` (``web.timeout_seconds``) is answered 503
  ``timeout``; it can commit nothing after its deadline (:mod:`recengine.web.server.http.deadline`),
  and the worker, which cannot stop a Python thread, finishes its other requests and exits for
  gunicorn to start a fresh one;
* a full garbage collection walks only objects newer than the last one
  (:mod:`recengine.web.server.collector`: at 1M articles one of everything held the GIL 120-220 ms);
* a worker that holds more connections waits a little before accepting (0.5 ms per open
  connection, at most 5 ms, then takes up to 8 waiting connections, at once again while more
  wait; :mod:`recengine.web.server.connections`, which also caps the connections a worker holds,
  ``web.max_connections``, closing idle ones first at the cap), so an idle worker takes
  the next one: kept-alive connections spread over the workers instead of piling onto the
  first that woke. A connection whose beacon waits for its group commit
  (:mod:`recengine.web.api.feedback`) does not count: it costs the worker nothing, and at 100
  beacons/s each worker holds some twenty of them, which delayed every other accept by the
  full 5 ms (related p50 2.5 -> 5.2 ms beside 500 events/s, measured);
* a worker whose master dies (``kill -9``) is told at once (:mod:`recengine.web.server.parent`): it
  closes its listening sockets (a restart binds the port at once), answers the requests it
  is running, with ``Connection: close``, and exits.

Not supported (refused at start): TLS, the PROXY protocol and uwsgi (put them in a proxy).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import os
import signal
import socket
import sys
import time
from typing import Any

from gunicorn.workers import base

from recengine.config import WebSettings, load_settings
from recengine.web.api.health import HEALTH_PATH
from recengine.web.server.collector import Collector
from recengine.web.server.connections import (
    SPARE_FILES,
    Acceptor,
    IdleConnections,
    raise_open_files_limit,
)
from recengine.web.server.http import dispatch
from recengine.web.server.http.admission import LOOP_TARGET_S, Admission, kernel_wait
from recengine.web.server.http.beacons import beacon_answerer
from recengine.web.server.http.dispatch import Outcome
from recengine.web.server.http.front import (
    MAX_HEAD_BYTES,
    Head,
    HttpError,
    Limits,
    error_response,
    read_body,
    read_head,
)
from recengine.web.server.http.hits import hit_answerer
from recengine.web.server.http.parsing import ParserConfig, parse_head, take_body
from recengine.web.server.http.slots import Slots
from recengine.web.server.logs import access_wanted, loop_access
from recengine.web.server.parent import signal_on_parent_death
from recengine.web.server.threads import Pool, limit_native_threads
from recengine.web.services import services_of

RETRY_AFTER_S = 1
HEALTH_THREADS = 2
# How long a thread may hold the interpreter lock while another waits for it (CPython's
# default 5 ms). The loop gives the lock up at every system call (accept, recv, send, epoll)
# and waits for it back while request threads compute lists: with 4 such threads a loop read
# waited p50 36 ms, p99 251 ms at 5 ms; p50 5 ms, p99 58 ms at 1 ms (a loop reading a socket
# every 2 ms beside 4 pure-Python threads, on the shared 2-core machine at load ~9).
SWITCH_INTERVAL_S = 0.001
SHED_REPORT_S = 10.0


class Worker(Acceptor, base.Worker):  # type: ignore[misc]
    """See the module docstring."""

    @classmethod
    def check_config(cls, cfg: Any, log: Any) -> None:
        if cfg.is_ssl or getattr(cfg, "protocol", "http") != "http" or _proxy_protocol(cfg):
            raise SystemExit(
                "recengine's worker serves plain HTTP/1.1: terminate TLS, the PROXY protocol "
                "or uwsgi in a proxy in front of it"
            )

    def run(self) -> None:
        found = services_of(self.wsgi)
        settings = found.settings if found is not None else load_settings()
        self.metrics = found.metrics if found is not None else None
        if found is not None:
            found.listen_for_changes()  # after the fork: the thread and connection are ours
        web = settings.web
        limit_native_threads(web.native_threads)
        self.limits = Limits(
            header_timeout=web.header_timeout_seconds,
            body_timeout=web.body_timeout_seconds,
            keepalive=float(self.cfg.keepalive),
            max_head=MAX_HEAD_BYTES,
            max_body=web.max_body_bytes,
        )
        self._queues(web)
        # answered on this loop, not on a thread: cache hits, then feedback beacons
        found_answerers = (hit_answerer(self.wsgi), beacon_answerer(self.wsgi))
        self.answerers = [answerer for answerer in found_answerers if answerer is not None]
        self.access_wanted = access_wanted(self.cfg, self.log)
        self.parser_cfg = ParserConfig(self.cfg)
        self.pool = Pool(self.cfg.threads + HEALTH_THREADS)
        self._connection_state()
        self.collector = Collector(web.gc_refresh_seconds)
        self.collector.start()
        signal_on_parent_death(signal.SIGTERM)  # a graceful stop (module docstring)
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        try:
            asyncio.run(self._serve())
        finally:
            self.collector.stop()

    def _queues(self, web: WebSettings) -> None:
        """The admission rule of the loop's queue and of the threads' (module docstring)."""
        codel = web.queue_target_seconds > 0
        target = web.queue_target_seconds if codel else None
        interval = web.queue_interval_seconds if codel else None
        self.slots = Slots(self.cfg.threads, web.queue_timeout_seconds, target, interval)
        # health checks have threads of their own: they never wait behind computed lists
        self.health_slots = Slots(HEALTH_THREADS, web.queue_timeout_seconds)
        loop_target = LOOP_TARGET_S if codel else None
        self.admission = Admission(web.queue_timeout_seconds, loop_target, interval)
        self.shed_reported, self.shed_report_at = 0, time.monotonic()

    def _connection_state(self) -> None:
        """The connections' bookkeeping (:mod:`recengine.web.server.connections`)."""
        self.connections = 0
        self.parked = 0  # connections whose request an answerer of the loop holds
        self.idle = IdleConnections()  # waiting for a request head, oldest first
        self.max_connections = int(self.cfg.worker_connections)
        self.accepting = self.backlogged = False
        self.names: dict[Any, Any] = {}  # listener -> its address
        self.closed_reported, self.closed_report_at = 0, time.monotonic()
        files = raise_open_files_limit(self.max_connections)
        if files < self.max_connections + SPARE_FILES:
            self.log.warning(
                "open files limited to %d (ulimit -n): fewer than web.max_connections (%d)",
                files,
                self.max_connections,
            )

    # -- the loop ------------------------------------------------------------------------

    async def _serve(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.wake = asyncio.Event()
        self.loop.add_reader(self.PIPE[0], self._signalled)
        self.tasks: set[asyncio.Task[None]] = set()
        self._accepting(True)
        self.serving_since = time.monotonic()
        while self.alive and not self._orphaned():
            self.notify()
            self._report_shedding()
            self._collect()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), 1.0)
        await self._stop()

    def _report_shedding(self) -> None:
        """A warning at most every SHED_REPORT_S while requests are being shed."""
        now = time.monotonic()
        shed = self.slots.shed + self.health_slots.shed + self.admission.shed
        if shed > self.shed_reported and now - self.shed_report_at >= SHED_REPORT_S:
            self.log.warning(
                "overloaded: %d requests answered 503 in %.0f s (waited over %g s)",
                shed - self.shed_reported,
                now - self.shed_report_at,
                self.slots.budget,
            )
            self.shed_reported, self.shed_report_at = shed, now
        closed = self.idle.closed - self.closed_reported
        if closed and now - self.closed_report_at >= SHED_REPORT_S:
            self.log.warning(
                "at the connection cap (web.max_connections = %d): closed %d connections"
                " waiting for a request head in %.0f s, to take new ones",
                self.max_connections,
                closed,
                now - self.closed_report_at,
            )
            self.closed_reported, self.closed_report_at = self.idle.closed, now

    def _collect(self) -> None:
        """The garbage collector's tick (:mod:`recengine.web.server.collector`), and its metrics."""
        pauses = self.collector.tick()
        if self.metrics is not None and pauses:
            self.metrics.publish_collections(pauses)

    def _signalled(self) -> None:
        with contextlib.suppress(OSError):
            os.read(self.PIPE[0], 4096)
        if not self.alive:
            self.wake.set()

    def _stopping(self) -> None:
        self.alive = False
        self.wake.set()

    def _orphaned(self) -> bool:
        """Whether the master is gone (:mod:`recengine.web.server.parent`): then this worker
        stops."""
        if self.ppid == os.getppid():
            return False
        self.alive = False
        return True

    async def _stop(self) -> None:
        """Stop accepting and close the listening sockets (a new server may bind the port at
        once), close idle connections, let running requests finish (graceful)."""
        self._accepting(False)
        for listener in self.sockets:
            with contextlib.suppress(OSError):
                listener.close()
        if self._orphaned():
            self.log.warning(
                "the master process (pid %s) is gone: stopped accepting; exiting once the %d"
                " open connections are answered",
                self.ppid,
                self.connections,
            )
        for task in list(self.idle):
            task.cancel()
        deadline = time.monotonic() + self.cfg.graceful_timeout
        while self.connections and time.monotonic() < deadline:
            self.notify()
            await asyncio.sleep(0.05)

    # -- connections ---------------------------------------------------------------------

    async def _connection(self, sock: socket.socket, client: Any, server: Any) -> None:
        """One accepted connection (counted in ``connections`` by :meth:`_accept`)."""
        task = asyncio.current_task()
        try:
            reader, writer = await asyncio.open_connection(sock=sock, limit=self.limits.max_head)
            try:
                await self._requests(reader, writer, client, server)
            finally:
                writer.close()
        except (OSError, asyncio.CancelledError):
            sock.close()  # the client went away, the worker is stopping, or room was made
        except Exception:
            self.log.exception("error serving a connection from %s", client)
        finally:
            self.connections -= 1
            if task is not None:
                self.idle.ended(task)
            if self.alive and not self._full():
                self._accepting(True)

    async def _requests(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client: Any, server: Any
    ) -> None:
        first = True
        while self.alive or first:
            try:
                found = await self._read(reader, writer, client, first=first)
            except HttpError as exc:
                self.rejected(exc.code)
                await self._send(writer, exc.response())
                return
            if found is None:
                return
            head, data = found
            outcome = await self._answer(head, data, client, server, writer)
            await self._send(writer, outcome.data)
            if not outcome.keep_alive:
                return
            first = False

    async def _read(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        client: Any,
        *,
        first: bool,
    ) -> tuple[Head, bytes] | None:
        """The next request, parsed, its body read (None: the client is done), the connection
        counted idle while it waits for the head."""
        task = asyncio.current_task()
        assert task is not None
        self.idle.add(task)
        if self.alive and not self.accepting:
            self._accepting(True)  # it may be closed to make room for a new one
        try:
            raw = await read_head(reader, self.limits, first=first)
        finally:
            self.idle.discard(task)
        if raw is None:
            return None
        head = parse_head(self.parser_cfg, raw, client, self.limits)
        body = await read_body(reader, writer, head, self.limits)
        take_body(head, body, client)
        return head, raw + body

    async def _answer(
        self, head: Head, data: bytes, client: Any, server: Any, writer: asyncio.StreamWriter
    ) -> Outcome:
        """The answer, on the loop or on a thread, if the request has not waited past its
        budget before the loop read it (:mod:`recengine.web.server.http.admission`; health
        exempt)."""
        health = head.path.split("?", 1)[0].startswith(HEALTH_PATH)  # and any sub-path
        # not counted: what it waited before this worker began serving (while it booted)
        since = time.monotonic() - self.serving_since
        waited = min(kernel_wait(writer.get_extra_info("socket")) or 0.0, since)
        if not health and not self.admission.admit(waited):
            return self._overloaded()
        keep = self.alive and self.limits.keepalive > 0
        started = time.perf_counter()
        outcome = await self._on_loop(head, data, client, keep)
        if outcome is not None:
            self._log_access(head, outcome, client, started)
            return outcome
        return await self._dispatch(head, client, server, health=health, waited=waited)

    def _overloaded(self) -> Outcome:
        """503 ``overloaded`` with Retry-After: the request waited past its budget."""
        self.rejected("overloaded")
        message = "the server is busy: try again shortly"
        headers = {"Retry-After": str(RETRY_AFTER_S)}
        return Outcome(error_response(503, "overloaded", message, headers), False)

    async def _on_loop(self, head: Any, data: bytes, client: Any, keep: bool) -> Outcome | None:
        """The first answerer's outcome (None: the request goes to a thread), the connection
        parked meanwhile (not counted by the accept delay: a beacon waiting for its group
        commit costs this worker nothing)."""
        self.parked += 1
        try:
            for answerer in self.answerers:
                outcome = await answerer(head, data, client, keep)
                if outcome is not None:
                    self._count_request()
                    return outcome
            return None
        finally:
            self.parked -= 1

    def _log_access(self, head: Any, outcome: Outcome, client: Any, started: float) -> None:
        """The access line of a request answered on the loop, as the app's would be."""
        if not self.access_wanted:
            return
        seconds = time.perf_counter() - started
        try:
            request, response, environ = loop_access(head, outcome, client)
            self.log.access(response, request, environ, datetime.timedelta(seconds=seconds))
        except Exception:
            self.log.exception("could not write an access line")

    async def _send(self, writer: asyncio.StreamWriter, data: bytes) -> None:
        writer.write(data)
        if not writer.transport.get_write_buffer_size():
            return  # all sent at once (a small answer): no deadline to watch
        try:
            await asyncio.wait_for(writer.drain(), self.limits.body_timeout)
        except TimeoutError:
            writer.transport.abort()  # the client does not read: drop it

    # -- requests ------------------------------------------------------------------------

    async def _dispatch(
        self, head: Head, client: Any, server: Any, *, health: bool, waited: float
    ) -> Outcome:
        path = head.path
        slots = self.health_slots if health else self.slots
        if not await slots.acquire(waited=0.0 if health else waited):
            return self._overloaded()
        timeout = float(self.cfg.timeout)
        deadline = time.monotonic() + timeout
        keep_alive = self.alive and self.limits.keepalive > 0

        def job() -> Outcome:
            return dispatch.serve(
                self,
                self.wsgi,
                head.request,
                client,
                server,
                deadline=deadline,
                keep_alive=keep_alive,
            )

        future = asyncio.wrap_future(self.pool.submit(job))
        future.add_done_callback(lambda _: slots.release())
        self._count_request()
        done, _ = await asyncio.wait([future], timeout=timeout)
        if not done:
            return self._cut(path, timeout)
        outcome: Outcome = future.result()
        return outcome

    def rejected(self, code: str) -> None:
        """Count a request answered here, before (or instead of) the app."""
        if self.metrics is not None:
            self.metrics.rejected.labels(code).inc()

    def _cut(self, path: str, timeout: float) -> Outcome:
        self.rejected("timeout")
        self.log.error(
            "request %s still running after %g s (timeout): answered 503, restarting worker",
            path,
            timeout,
        )
        self._stopping()
        message = (
            f"the request ran longer than {timeout:g} s (web.timeout_seconds) and was stopped;"
            " nothing it wrote was kept"
        )
        return Outcome(error_response(503, "timeout", message), False)

    def _count_request(self) -> None:
        self.nr += 1
        if self.nr >= self.max_requests and self.alive:
            self.log.info("autorestarting worker after %s requests", self.nr)
            self._stopping()


def _proxy_protocol(cfg: Any) -> bool:
    value = getattr(cfg, "proxy_protocol", False)
    return value not in (False, None, "off", "none", "")
