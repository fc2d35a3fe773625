"""What the executors run: analysis, document frequencies, features, the write back to SQL.

Every function here is a plain top-level function of plain arguments, so Spark can pickle it to
the Python workers. A worker builds its :class:`Featurizer` (the jieba / rjieba dictionary load)
the first time a task needs it and keeps it for every later task: Python workers are reused
(``spark.python.worker.reuse``), so that is once per worker process, not once per row or task.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator
from operator import add
from typing import Any

from recengine.config import Settings
from recengine.features.tfidf import IdfModel
from recengine.pipeline.featurize import Featurizer, TextStats, Words
from recengine.pipeline.reindex.spark.source import Row3, worker_factory
from recengine.storage.db import transaction
from recengine.storage.rows.features import replace_features

_featurizers: dict[str, Featurizer] = {}
# (article id, fingerprint, vector bytes, n_tokens, encoder vector bytes or None)
Written = tuple[int, int, bytes, int, bytes | None]
_models: dict[str, IdfModel] = {}


def settings_blob(settings: Settings) -> str:
    """Settings as JSON: what executors rebuild their featurizer from."""
    return settings.model_dump_json(exclude={"api_key"})


def worker_featurizer(blob: str) -> Featurizer:
    if blob not in _featurizers:
        _featurizers[blob] = Featurizer(Settings(**json.loads(blob)))
    return _featurizers[blob]


def analyze_partition(
    blob: str, words: Words, rows: Iterable[Row3]
) -> Iterator[tuple[int, TextStats]]:
    """``(id, stats)`` of each row, tokenized with the dictionary and ``words`` (the new
    model's, ``pipeline.reindex.new_words``)."""
    featurizer = worker_featurizer(blob)
    featurizer.use_words(words)
    for article_id, title, content in rows:
        yield article_id, featurizer.analyze(title, content)


def partition_df(stats: Iterable[tuple[int, TextStats]]) -> Iterator[tuple[str, int]]:
    """Document frequencies within one partition (combined before the shuffle)."""
    df: Counter[str] = Counter()
    for _, s in stats:
        df.update(s.counts.keys())
    return iter(df.items())


def document_frequencies(stats: Any, partitions: int) -> tuple[int, dict[str, int]]:
    """``(n_docs, term -> df)`` over an RDD of ``(id, TextStats)``: a distributed count.

    The summed table is streamed to the driver partition by partition; it is the IDF model
    itself, which is stored as one row anyway.
    """
    n_docs = stats.count()
    table = stats.mapPartitions(partition_df).reduceByKey(add, partitions)
    return n_docs, dict(table.toLocalIterator())


def features_partition(
    blob: str,
    digest: str,
    model: Any,
    stats: Iterable[tuple[int, TextStats]],
    chunk: int = 1_000,
) -> Iterator[Written]:
    """``(id, fingerprint, vector bytes, n_tokens, encoder vector bytes or None)`` under the
    broadcast model bytes (the encoder's vector was computed with the analysis, on the
    executor, ``Featurizer.analyze``).

    The model is parsed once per worker and model, not once per task; ``digest`` (of the model
    bytes) names it, because version numbers repeat across databases and workers outlive jobs.
    """
    featurizer = worker_featurizer(blob)
    if digest not in _models:
        _models.clear()
        _models[digest] = IdfModel.from_bytes(model.value)
    idf = _models[digest]
    batch: list[tuple[int, TextStats]] = []
    for item in stats:
        batch.append(item)
        if len(batch) == chunk:
            yield from _features(featurizer, idf, batch)
            batch = []
    yield from _features(featurizer, idf, batch)


def _features(
    featurizer: Featurizer, model: IdfModel, batch: list[tuple[int, TextStats]]
) -> Iterator[Written]:
    rows = featurizer.features([s for _, s in batch], model)
    for (article_id, _), f in zip(batch, rows, strict=True):
        yield article_id, f.fingerprint, f.vector, f.n_tokens, f.embedding


def write_partition(url: str, version: int, batch: int, rows: Iterable[Written]) -> Iterator[int]:
    """Write features under ``version`` in transactions of ``batch`` rows; yields the count.

    ``replace_features`` deletes before it inserts, so a task Spark retries rewrites its rows
    instead of failing on duplicates.
    """
    factory = worker_factory(url)
    chunk: list[dict[str, Any]] = []
    written = 0
    for article_id, fingerprint, vector, n_tokens, embedding in rows:
        chunk.append(
            {
                "article_id": article_id,
                "fingerprint": fingerprint,
                "vector": vector,
                "n_tokens": n_tokens,
                "embedding": embedding,
            }
        )
        if len(chunk) == batch:
            written += _write(factory, version, chunk)
            chunk = []
    written += _write(factory, version, chunk)
    yield written


def _write(factory: Any, version: int, chunk: list[dict[str, Any]]) -> int:
    if chunk:
        with transaction(factory) as session:
            replace_features(session=session, version=version, rows=chunk)
    return len(chunk)
