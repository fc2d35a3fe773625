"""Entry point for ``spark-submit``: the ``recengine reindex --engine spark`` command.

Usage on a cluster (recengine installed on every node, or shipped as a packed virtualenv)::

    spark-submit --master yarn --deploy-mode client \\
        $(python -c "import recengine.cli.operations.spark_submit as m; print(m.__file__)") \\
        [--input hdfs:///exports/articles.parquet]

Settings come from the environment as for every recengine command (``RECENGINE_DATABASE_URL``,
``RECENGINE_CONFIG``, ...). The master is the one given to spark-submit.
"""

from __future__ import annotations

import sys

from recengine.cli.main import main as cli_main


def main(argv: list[str] | None = None) -> None:
    cli_main(["reindex", "--engine", "spark", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    main()
