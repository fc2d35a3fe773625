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
from recengine.pipeline.featurize import Featurizer, Known, TextStats, Words, reusable
from recengine.pipeline.reindex.spark.source import Row3, worker_factory
from recengine.storage.db import transaction
from recengine.storage.rows.features import embeddings_of, replace_features

_featurizers: dict[str, Featurizer] = {}
CHUNK = 256  # rows analysed together: the encoder's batch (the local engine's pages are larger)
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
    blob: str,
    words: Words,
    rows: Iterable[Row3],
    url: str | None = None,
    reuse: int | None = None,
    encoded: Any = None,
) -> Iterator[tuple[int, TextStats]]:
    """``(id, stats)`` of each row, tokenized with the dictionary and ``words`` (the new
    model's, ``pipeline.reindex.new_words``), :data:`CHUNK` rows per analysis (the encoder
    runs on a batch, not on each text).

    With ``reuse`` (a version, ``versions.reusable_version``), a text whose hash is the one
    its stored encoder vector under ``reuse`` was computed from keeps that vector, read from
    the database at ``url`` as the local engine's pass 1 does; the others are encoded, and
    their number is added to the accumulator ``encoded`` (when given)."""
    featurizer = worker_featurizer(blob)
    featurizer.use_words(words)
    for page in _chunks(rows, CHUNK):
        known = _known(url, reuse, [i for i, _, _ in page]) if reuse is not None else None
        analyzed = featurizer.analyze_many([(t, c) for _, t, c in page], known=known)
        if encoded is not None and featurizer.encodes:
            encoded.add(sum(v is None for v in reusable(analyzed.text_hashes, known)))
        yield from zip((i for i, _, _ in page), analyzed.stats(), strict=True)


def _chunks(rows: Iterable[Row3], size: int) -> Iterator[list[Row3]]:
    page: list[Row3] = []
    for row in rows:
        page.append(row)
        if len(page) == size:
            yield page
            page = []
    if page:
        yield page


def _known(url: str | None, version: int, ids: list[int]) -> Known:
    """The stored ``(text hash, encoder vector)`` under ``version`` of each of ``ids``, in
    order (None where it has none)."""
    if url is None:
        raise ValueError("reusing stored encoder vectors needs the database's url")
    with transaction(worker_factory(url)) as session:
        rows = embeddings_of(session=session, version=version, article_ids=ids)
    stored = {r.id: (r.text_hash, r.embedding) for r in rows if r.embedding is not None}
    return [stored.get(i) for i in ids]


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
