"""The ``recengine`` command line. Parses input, owns sessions, formats output; nothing else.

:mod:`.main` is the click group (commands loaded by name, errors turned into messages and exit
codes); :mod:`.context`, :mod:`.params`, :mod:`.output` and :mod:`.progress` are what every
command shares. Commands, by what they are for:

* :mod:`.content`: reading and correcting what is stored (``related``, ``feed``, ``events``,
  ``duplicates``, ``article``, ``reader``, ``override``);
* :mod:`.operations`: running the service (``db``, ``ingest``, ``reindex``, ``serve``,
  ``demo``, ``report``, Spark).
"""

from recengine.cli.main import main

__all__ = ["main"]
