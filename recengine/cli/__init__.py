"""The ``recengine`` command line. Parses input, owns sessions, formats output; nothing else."""

from recengine.cli.main import main

__all__ = ["main"]
