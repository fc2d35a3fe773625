"""recengine's gunicorn worker: slow clients cost no thread, overload is shed, long requests cut.

``recengine serve`` runs it; plain gunicorn gets it with
``gunicorn -c python:recengine.web.gunicorn_conf 'recengine.web:create_app()'``.

Why not gthread: its threads read the request from the socket, so 12 stalled uploads (or 16
half-sent headers) held every thread of a two-worker server and health checks timed out for
as long as the clients kept their connections; its ``timeout`` is a heartbeat of the worker's
main loop, which a thread stuck in a 90 s request does not stop, so nothing was cut. Here:

* an event loop per worker accepts connections and reads each request whole
  (:mod:`recengine.web.front`: ``web.header_timeout_seconds``, ``web.body_timeout_seconds``,
  408 past them); only a complete request goes to one of ``threads`` threads
  (:mod:`recengine.web.dispatch`), and the loop writes the answer back;
* some complete requests are answered by the loop itself, with no thread: stored answers whose
  index needs no check first (:mod:`recengine.web.hits`) and reader-feedback beacons
  (:mod:`recengine.web.feedback`), each with its access line;
* a request waits for a thread at most ``web.queue_timeout_seconds`` (``queue_target_seconds``
  while the queue stands), else 503 ``overloaded`` with ``Retry-After``
  (:mod:`recengine.web.slots`); health checks skip the queue;
* a request still running after ``timeout`` (``web.timeout_seconds``) is answered 503
  ``timeout``; it can commit nothing after its deadline (:mod:`recengine.web.deadline`), and
  the worker, which cannot stop a Python thread, finishes its other requests and exits for
  gunicorn to start a fresh one;
* a full garbage collection walks only objects newer than the last one
  (:mod:`recengine.web.collector`: at 1M articles one of everything held the GIL 120-220 ms);
* a worker that holds more connections waits a little before accepting (0.5 ms per open
  connection, at most 5 ms, then takes up to 8 waiting connections), so an idle worker takes
  the next one: kept-alive connections spread over the workers instead of piling onto the
  first that woke. A connection whose beacon waits for its group commit
  (:mod:`recengine.web.feedback`) does not count: it costs the worker nothing, and at 100
  beacons/s each worker holds some twenty of them, which delayed every other accept by the
  full 5 ms (related p50 2.5 -> 5.2 ms beside 500 events/s, measured);
* a worker whose master dies (``kill -9``) is told at once (:mod:`recengine.web.parent`): it
  closes its listening sockets (a restart binds the port at once), answers the requests it
  is running, with ``Connection: close``, and exits.

Not supported (refused at start): TLS, the PROXY protocol and uwsgi (put them in a proxy).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import datetime
import os
import queue
import signal
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from gunicorn.workers import base

from recengine.config import load_settings
from recengine.web import dispatch
from recengine.web.collector import Collector
from recengine.web.connections import SPARE_FILES, IdleConnections, raise_open_files_limit
from recengine.web.dispatch import Outcome
from recengine.web.feedback import beacon_answerer
from recengine.web.front import (
    MAX_HEAD_BYTES,
    Head,
    HttpError,
    Limits,
    error_response,
    read_body,
    read_head,
)
from recengine.web.health import HEALTH_PATH
from recengine.web.hits import hit_answerer
from recengine.web.logs import access_wanted, loop_access
from recengine.web.parent import signal_on_parent_death
from recengine.web.parsing import ParserConfig, parse_head, take_body
from recengine.web.services import services_of
from recengine.web.slots import Slots

ACCEPT_DELAY_PER_CONNECTION = 0.0005
ACCEPT_DELAY_MAX = 0.005
# Connections taken per wake-up: with every worker busy the delay above must not cap the rate
# of accepts (one per 5 ms would be 200/s per worker), so a worker takes what is waiting.
ACCEPT_BATCH = 8
RETRY_AFTER_S = 1
SHED_REPORT_S = 10.0


def limit_native_threads(count: int) -> None:
    """At most ``count`` threads in each native library's pool (OpenBLAS, OpenMP) of this
    worker (``web.native_threads``; 0: the libraries' own defaults, one per core).

    A worker's parallelism is its request threads and its sibling workers: a pool of one
    thread per core in every worker only contends for the same cores. Measured on a 2-core
    machine, 2 workers at 150 related lists/s over 2,529 real articles: half the worker's time
    was OpenBLAS's threads waiting for each other in the lists' small pairwise product
    (``recommend.suppress.pairwise_cosines``). Libraries loaded already are limited through
    threadpoolctl; those loaded later (FAISS's OpenMP on the first search) read the
    environment when they load."""
    if count <= 0:
        return
    from threadpoolctl import threadpool_limits

    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = str(count)
    threadpool_limits(limits=count)


def accept_delay(connections: int, parked: int) -> float:
    """Seconds a worker holding ``connections`` waits before accepting another (module
    docstring): the ``parked`` ones, beacons waiting for their group commit, do not count."""
    return min(ACCEPT_DELAY_PER_CONNECTION * max(0, connections - parked), ACCEPT_DELAY_MAX)


class _Pool:
    """``size`` daemon threads running jobs (daemon: a stuck job must not keep a worker alive)."""

    def __init__(self, size: int) -> None:
        self.jobs: queue.SimpleQueue[tuple[concurrent.futures.Future[Any], Callable[[], Any]]]
        self.jobs = queue.SimpleQueue()
        for n in range(size):
            threading.Thread(target=self._work, name=f"recengine-{n}", daemon=True).start()

    def submit(self, job: Callable[[], Any]) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self.jobs.put((future, job))
        return future

    def _work(self) -> None:
        while True:
            future, job = self.jobs.get()
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(job())
                except BaseException as exc:  # handed to the loop, which logs it
                    future.set_exception(exc)


class Worker(base.Worker):  # type: ignore[misc]
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
        codel = web.queue_target_seconds > 0
        self.slots = Slots(
            self.cfg.threads,
            web.queue_timeout_seconds,
            web.queue_target_seconds if codel else None,
            web.queue_interval_seconds if codel else None,
        )
        # answered on this loop, not on a thread: cache hits, then feedback beacons
        found_answerers = (hit_answerer(self.wsgi), beacon_answerer(self.wsgi))
        self.answerers = [answerer for answerer in found_answerers if answerer is not None]
        self.access_wanted = access_wanted(self.cfg, self.log)
        self.parser_cfg = ParserConfig(self.cfg)
        self.pool = _Pool(self.cfg.threads)
        self.connections = 0
        self.parked = 0  # connections whose request an answerer of the loop holds
        self.idle = IdleConnections()  # waiting for a request head, oldest first
        self.max_connections = int(self.cfg.worker_connections)
        self.accepting = self.backlogged = False
        self.closed_reported, self.closed_report_at = 0, time.monotonic()
        files = raise_open_files_limit(self.max_connections)
        if files < self.max_connections + SPARE_FILES:
            self.log.warning(
                "open files limited to %d (ulimit -n): fewer than web.max_connections (%d)",
                files,
                self.max_connections,
            )
        self.shed_reported, self.shed_report_at = 0, time.monotonic()
        self.collector = Collector(web.gc_refresh_seconds)
        self.collector.start()
        signal_on_parent_death(signal.SIGTERM)  # a graceful stop (module docstring)
        try:
            asyncio.run(self._serve())
        finally:
            self.collector.stop()

    # -- the loop ------------------------------------------------------------------------

    async def _serve(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.wake = asyncio.Event()
        self.loop.add_reader(self.PIPE[0], self._signalled)
        self.tasks: set[asyncio.Task[None]] = set()
        self._accepting(True)
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
        if self.slots.shed > self.shed_reported and now - self.shed_report_at >= SHED_REPORT_S:
            self.log.warning(
                "overloaded: %d requests answered 503 in %.0f s (waited over %g s for a thread)",
                self.slots.shed - self.shed_reported,
                now - self.shed_report_at,
                self.slots.budget,
            )
            self.shed_reported, self.shed_report_at = self.slots.shed, now
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
        """The garbage collector's tick (:mod:`recengine.web.collector`), and its metrics."""
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
        """Whether the master is gone (:mod:`recengine.web.parent`): then this worker stops."""
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

    # -- accepting -----------------------------------------------------------------------

    def _accepting(self, on: bool) -> None:
        if on == self.accepting:
            return
        self.accepting = on
        for listener in self.sockets:
            if on:
                listener.setblocking(False)
                self.loop.add_reader(listener.fileno(), self._readable, listener)
            else:
                self.loop.remove_reader(listener.fileno())

    def _readable(self, listener: Any) -> None:
        """A connection is waiting: take it now if idle (or more were waiting than the last
        batch took), else after the others had a chance."""
        delay = 0.0 if self.backlogged else accept_delay(self.connections, self.parked)
        if delay <= 0:
            self._accept(listener)
            return
        self._accepting(False)
        self.loop.call_later(delay, self._accept, listener)

    def _full(self) -> bool:
        """At the connection cap (those being closed to make room do not count)."""
        return self.connections - len(self.idle.closing) >= self.max_connections

    def _accept(self, listener: Any) -> None:
        """Take up to ACCEPT_BATCH connections; at the cap, each closes the one that has
        waited longest for a request head (:mod:`recengine.web.connections`)."""
        if not self.alive:
            return  # stopping: the listener is closed, or about to be
        taken = 0
        while taken < ACCEPT_BATCH and (not self._full() or len(self.idle)):
            try:
                sock, client = listener.accept()
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                break  # none left (another worker took it)
            if self._full():
                self.idle.close_oldest()
            taken += 1
            sock.setblocking(False)
            self.connections += 1
            task = self.loop.create_task(self._connection(sock, client, listener.getsockname()))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        self.backlogged = taken == ACCEPT_BATCH
        self._accepting(self.alive and (not self._full() or len(self.idle) > 0))

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
        task = asyncio.current_task()
        assert task is not None
        while self.alive or first:
            self.idle.add(task)
            if self.alive and not self.accepting:
                self._accepting(True)  # it may be closed to make room for a new one
            try:
                raw = await read_head(reader, self.limits, first=first)
                self.idle.discard(task)
                if raw is None:
                    return
                head = parse_head(self.parser_cfg, raw, client, self.limits)
                body = await read_body(reader, writer, head, self.limits)
                take_body(head, body, client)
                data = raw + body
            except HttpError as exc:
                self.rejected(exc.code)
                await self._send(writer, exc.response())
                return
            finally:
                self.idle.discard(task)
            keep = self.alive and self.limits.keepalive > 0
            started = time.perf_counter()
            outcome = await self._on_loop(head, data, client, keep)
            if outcome is not None:
                self._log_access(head, outcome, client, started)
            else:
                outcome = await self._dispatch(head, client, server)
            await self._send(writer, outcome.data)
            if not outcome.keep_alive:
                return
            first = False

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
        try:
            await asyncio.wait_for(writer.drain(), self.limits.body_timeout)
        except TimeoutError:
            writer.transport.abort()  # the client does not read: drop it

    # -- requests ------------------------------------------------------------------------

    async def _dispatch(self, head: Head, client: Any, server: Any) -> Outcome:
        path = head.path
        health = path.split("?", 1)[0].startswith(HEALTH_PATH)  # and any health sub-path
        if not await self.slots.acquire(priority=health):
            self.rejected("overloaded")
            message = "the server is busy: try again shortly"
            headers = {"Retry-After": str(RETRY_AFTER_S)}
            return Outcome(error_response(503, "overloaded", message, headers), False)
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
        future.add_done_callback(lambda _: self.slots.release())
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
