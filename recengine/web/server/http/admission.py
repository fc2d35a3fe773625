"""How long a request waited before its worker's loop got to it: the admission rule's clock.

The threads' queue (:mod:`recengine.web.server.http.slots`) refuses a request that waits too long
for a thread, but what the loop answers itself (cache hits, beacons) never waits for a thread, and
the loop's own queue was never measured: connections waiting in the kernel's accept queue and
requests waiting in socket buffers while the loop is busy. At 800 requests/s with 90 % cache
hits (a new connection per request) only 4.4 % were refused, and accepted requests waited up
to 6.4 s, health checks 5.05 s (issue 46).

So every request's wait is counted from when its last byte reached the kernel (Linux's
``TCP_INFO``: ``tcpi_last_data_recv``, in ms), read when the loop has the whole request, and
the worker applies the threads' rule to it, whichever path would answer it: past the budget
(``web.queue_timeout_seconds``), or past ``LOOP_TARGET_S`` once the loop's queue stands
(CoDel over ``web.queue_interval_seconds``, as in the threads' queue), it is answered 503
``overloaded`` with ``Retry-After``; a request for a thread waits for one only what is left
of its budget. Health checks are exempt, and have threads of their own. What a request waited
before its worker began serving (while it booted) is not counted.

Where ``TCP_INFO`` cannot be read (not Linux, a Unix socket), no wait is counted: only the
threads' queue sheds, as before.
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable
from typing import Any

# struct tcp_info (<linux/tcp.h>): 8 one-byte fields, then 32-bit ones; tcpi_last_data_recv is
# the 12th of those (rto, ato, snd_mss, rcv_mss, unacked, sacked, lost, retrans, fackets,
# last_data_sent, last_ack_sent, last_data_recv)
LAST_DATA_RECV_OFFSET = 8 + 11 * 4
TCP_INFO_BYTES = LAST_DATA_RECV_OFFSET + 4
TCP_INFO = getattr(socket, "TCP_INFO", None)
# The loop's target (the threads' is web.queue_target_seconds, 10 ms): the kernel counts in
# jiffies (4 ms at HZ=250) and on a busy machine a process waits tens of ms for a core now and
# then, so at 10 ms requests were refused on a loaded machine that was not overloaded; 50 ms
# keeps the loop's standing queue (what a health check waits behind) short all the same.
LOOP_TARGET_S = 0.05


def kernel_wait(sock: Any) -> float | None:
    """Seconds since the last byte of ``sock`` reached the kernel (None: not known here)."""
    if TCP_INFO is None or sock is None:
        return None
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, TCP_INFO, TCP_INFO_BYTES)
    except (OSError, AttributeError):
        return None
    if len(info) < TCP_INFO_BYTES:
        return None
    milliseconds: int = struct.unpack_from("I", info, LAST_DATA_RECV_OFFSET)[0]
    return milliseconds / 1000


class Admission:
    """The threads' rule (:mod:`recengine.web.server.http.slots`) for the wait before the loop read
    a request: up to ``budget`` seconds; once every request for ``interval`` has waited over
    ``target`` (the loop's queue stands: more arrives than it answers), up to ``target``, so
    that the queue stays short and a health check behind it is read soon. ``target`` and
    ``interval`` of None: the budget alone. Event-loop only."""

    def __init__(
        self,
        budget: float,
        target: float | None = None,
        interval: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.budget, self.target, self.interval, self.clock = budget, target, interval, clock
        self.long_since: float | None = None  # the first of the requests since over target
        self.shed = 0

    def admit(self, waited: float) -> bool:
        """Whether a request that waited ``waited`` seconds may be answered (else: counted as
        shed, the caller answers 503)."""
        limit = self.budget
        if self.target is not None and self.interval is not None:
            now = self.clock()
            if waited <= self.target:
                self.long_since = None
            elif self.long_since is None:
                self.long_since = now
            elif now - self.long_since >= self.interval:
                limit = self.target
        if waited <= limit:
            return True
        self.shed += 1
        return False
