"""Where the Spark job's articles come from: the database (partitioned reads) or an export.

**Database**: the driver reads only the live article ids (one streaming query) and cuts them
into ranges of about ``spark.read_partition_rows`` articles; each Spark task then reads its own
range from the database with recengine's SQLAlchemy code, in keyset pages, so no task holds more
than a page of texts and no JDBC driver jar is needed (the database must be reachable from the
executors, as it is from the driver).

**Exports**: Parquet files or JSON Lines (the ingest record format: ``id``, ``title``,
``content``; other columns are ignored). Each task maps its records' caller ids to the database's
article ids; records whose article is not in the database (or is deleted) are dropped, because
features are written for stored articles only. Live articles the export lacks get their features
computed after the Spark stage (``reindex.fill_missing``), so the result is complete either way.

Rows handed on: ``(article id, title, content)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session, sessionmaker

from recengine.errors import ConfigError
from recengine.storage.db import make_engine, make_session_factory, transaction
from recengine.storage.models import Article
from recengine.storage.rows.articles import count_live, find_existing

Row3 = tuple[int, str, str]
PAGE = 500

_factories: dict[str, sessionmaker[Session]] = {}


def worker_factory(url: str) -> sessionmaker[Session]:
    """One engine per database per Python worker, reused by every task it runs."""
    if url not in _factories:
        engine: Engine = make_engine(url, pool_size=1) if "sqlite" not in url else make_engine(url)
        _factories[url] = make_session_factory(engine)
    return _factories[url]


def id_ranges(factory: sessionmaker[Session], rows_per_range: int) -> list[tuple[int, int]]:
    """``[lo, hi)`` ranges of article ids holding about ``rows_per_range`` live articles each."""
    bounds: list[int] = []
    with transaction(factory) as session:
        ids = session.execute(
            select(Article.id).where(Article.deleted_at.is_(None)).order_by(Article.id),
            execution_options={"yield_per": 10_000},
        ).scalars()
        last = None
        for n, article_id in enumerate(ids):
            if n % rows_per_range == 0:
                bounds.append(article_id)
            last = article_id
    if last is None:
        return []
    bounds.append(last + 1)
    return list(pairwise(bounds))


def read_range(url: str, bounds: tuple[int, int]) -> Iterator[Row3]:
    """The live articles with ``lo <= id < hi``, in keyset pages of short transactions."""
    lo, hi = bounds
    factory = worker_factory(url)
    after = lo - 1
    while True:
        with transaction(factory) as session:
            rows = session.execute(
                select(Article.id, Article.title, Article.content)
                .where(Article.id > after, Article.id < hi, Article.deleted_at.is_(None))
                .order_by(Article.id)
                .limit(PAGE)
            ).all()
        if not rows:
            return
        after = rows[-1].id
        yield from ((r.id, r.title, r.content) for r in rows)


def from_database(spark: Any, factory: sessionmaker[Session], url: str, rows: int) -> Any:
    """An RDD of ``(id, title, content)``, one partition per id range.

    Ranges hold at most ``rows`` articles, and there are at least 4 per core Spark has
    (``defaultParallelism``), so that tasks of uneven cost still keep every core busy.
    """
    context = spark.sparkContext
    with transaction(factory) as session:
        live = count_live(session=session)
    per_range = max(1, min(rows, -(-live // (4 * max(1, context.defaultParallelism)))))
    ranges = id_ranges(factory, per_range)
    return context.parallelize(ranges, max(1, len(ranges))).flatMap(
        lambda bounds: read_range(url, bounds)
    )


def from_export(spark: Any, path: Path, url: str) -> Any:
    """An RDD of ``(id, title, content)`` from a Parquet or JSON Lines export of articles."""
    reader = spark.read
    if path.suffix.lower() in {".jsonl", ".json", ".ndjson"}:
        frame = reader.json(str(path))
    elif path.suffix.lower() == ".parquet" or path.is_dir():
        frame = reader.parquet(str(path))
    else:
        raise ConfigError(f"{path}: expected a .parquet file or folder, or .jsonl JSON Lines")
    missing = {"id", "title", "content"} - set(frame.columns)
    if missing - {"title", "content"} or missing == {"title", "content"}:
        raise ConfigError(f"{path}: needs an id column and a title or content column")
    columns = [
        frame["id"].cast("string").alias("id"),
        *(frame[c] if c in frame.columns else _empty(c) for c in ("title", "content")),
    ]
    return frame.select(*columns).rdd.mapPartitions(lambda part: resolve_ids(url, part))


def _empty(name: str) -> Any:
    from pyspark.sql.functions import lit

    return lit("").alias(name)


def resolve_ids(url: str, records: Iterable[Any]) -> Iterator[Row3]:
    """Caller ids -> article ids, in chunks; records of unknown or deleted articles dropped."""
    factory = worker_factory(url)
    chunk: list[Any] = []
    for record in records:
        chunk.append(record)
        if len(chunk) == PAGE:
            yield from _resolve(factory, chunk)
            chunk = []
    yield from _resolve(factory, chunk)


def _resolve(factory: sessionmaker[Session], chunk: list[Any]) -> Iterator[Row3]:
    if not chunk:
        return
    with transaction(factory) as session:
        found = find_existing(session=session, external_ids=[r["id"] for r in chunk if r["id"]])
    for record in chunk:
        row = found.get(record["id"])
        if row is not None and not row.deleted:
            yield row.id, record["title"] or "", record["content"] or ""
