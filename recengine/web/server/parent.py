"""A worker learns at once that its gunicorn master is gone.

When the master is killed (``kill -9``, the OOM killer), nothing tells its workers: they kept
serving and committing for 2-12 s, holding the listening socket, so a restart in that window
failed with "port in use" (issue 46, 1 of 14 rounds). On Linux the kernel signals a process
when its parent dies if it asked (``prctl(PR_SET_PDEATHSIG)``); the worker asks for SIGTERM,
gunicorn's "stop gracefully", which wakes its event loop through gunicorn's signal pipe. The
worker then closes its listening sockets, answers the requests it is running and exits
(:meth:`recengine.web.server.worker.Worker._stop`). Elsewhere (and for a master that died before the
request was made) the worker's loop compares ``os.getppid()`` with its master's pid every
second.
"""

from __future__ import annotations

import ctypes
import sys

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def signal_on_parent_death(signum: int) -> bool:
    """Ask the kernel to send this process ``signum`` when its parent exits.

    Returns:
        Whether it was arranged (False where the call does not exist: not Linux).
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False
