"""A full reindex on Spark after a first one, with the sentence encoder on: what keeping the
stored encoder vectors of unchanged texts saves (``versions.reusable_version``).

The 2,529 real documents of ../shared/data (``--docs`` of them) are ingested into a SQLite
database and reindexed once by the local engine (which encodes every text). Then, alternately
(``--rounds`` times), Spark (``--master``, JVM start included) reindexes the same database:

* **kept**: as shipped, each executor keeps the vectors stored for texts whose hash is the one
  they were computed from (here every text);
* **encoded**: the stored vectors taken away first (``article_features.embedding`` set to NULL),
  so the executors encode every text, as every Spark reindex did before.

Printed per run: wall seconds, the CPU of this process tree (the JVM and its Python workers
included) and how many texts the executors encoded (the reindex's own count).

Usage::

    python -m bench.spark_reuse [--docs 2529] [--master local[2]] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from sqlalchemy import update

from bench.corpus import real_docs
from bench.reindex import database, spark_reindexed
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.reindex.full import reindex
from recengine.storage.models import ArticleFeatures

ENCODER = {"dense": {"encoder": "use"}}


def spark_once(settings: Any, factory: Any, master: str, encoded: bool) -> None:
    """One Spark full reindex; with ``encoded``, every stored vector taken away first."""
    if encoded:
        with factory.begin() as session:
            session.execute(update(ArticleFeatures).values(embedding=None))
    result, seconds, used = spark_reindexed(settings, factory, master)
    label = "encoded" if encoded else "kept"
    print(
        f"  {label:8s} {seconds:6.1f} s wall, CPU {used:6.1f} s, "
        f"{result.encoded} of {result.n_docs} texts encoded, load {os.getloadavg()[0]:.1f}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=2529)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    docs = real_docs()[: args.docs]
    with tempfile.TemporaryDirectory() as folder:
        settings, factory = database(Path(folder), docs, **ENCODER)
        start = time.perf_counter()
        reindex(factory=factory, featurizer=Featurizer(settings), resume=False)
        took = time.perf_counter() - start
        print(f"{len(docs)} real documents; the first reindex (local) {took:.1f} s")
        for _ in range(args.rounds):
            spark_once(settings, factory, args.master, encoded=False)
            spark_once(settings, factory, args.master, encoded=True)


if __name__ == "__main__":
    main()
