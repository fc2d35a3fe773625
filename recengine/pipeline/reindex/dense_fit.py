"""The model of the dense part of related lists, fitted by every reindex: LSA of a sample of
the new version's stored TF-IDF vectors (``features.lsa``), stored with the version.

Run by the tail every engine shares (``pipeline.reindex.run``), after the new version's
features are written and before the switch, so the model is in SQL before any process can
follow the version (``derived.dense`` reads it when it builds the version's index). Local and
Spark reindexes fit it the same way from the same stored vectors, so they store the same model.

The sample: at most ``dense.sample`` live articles with terms, every ``ceil(n / sample)``-th
by id (ids are read alone, then the sample's vectors): memory bounded by the sample, whatever
the corpus size. The corpus-size rule (:func:`dense_dims`, measured in ``BENCHMARKS.md``): no
dense part below ``dense.min_articles`` articles; at most one dimension per
``dense.articles_per_dim`` articles.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import numpy as np
import numpy.typing as npt
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import DenseSettings
from recengine.derived.dense import ENCODER_PART, LSA_PART
from recengine.features.lsa import fit_lsa
from recengine.features.tfidf import SparseVector
from recengine.pipeline.featurize import encoder_params
from recengine.pipeline.reindex.sample import PAGE, spread_ids
from recengine.storage.db import transaction
from recengine.storage.rows.features import delete_model_part, features_of, save_model_part
from recengine.storage.rows.index_rows import index_rows

SEED = 0


def dense_dims(settings: DenseSettings, n: int) -> int:
    """Dimensions of the dense part for a corpus of ``n`` articles (0: none)."""
    if not settings.dims or n < settings.min_articles:
        return 0
    dims = settings.dims
    if settings.articles_per_dim:
        dims = min(dims, n // settings.articles_per_dim)
    return max(0, min(dims, n - 1))


def fit_dense(factory: sessionmaker[Session], settings: DenseSettings, version: int) -> int:
    """Fit and store ``version``'s LSA model (or remove a stale one when the rule says none),
    and record its encoder part (``dense.encoder = "use"``: the articles' vectors were written
    with their features; the part says so, with the encoder's settings).

    Returns:
        The LSA dimensions (0: no LSA part for this version).
    """
    save_encoder_part(factory, settings, version)
    with index_rows(factory) as rows:
        n = rows.count(version=version, needs_terms=True)
    # the encoder alone (share 1) leaves the LSA part nothing
    alone = settings.encoder != "lsa" and settings.encoder_share >= 1.0
    dims = 0 if alone else dense_dims(settings, n)
    ids = sample_ids(factory, version, n, settings.sample) if dims else []
    hashes, weights = sample_vectors(factory, version, ids)
    if dims:
        try:
            model = fit_lsa(
                hashes,
                weights,
                dims,
                max_terms=settings.max_terms,
                power_iterations=settings.power_iterations,
                seed=SEED,
            )
        except ValueError:  # too few distinct terms for the dimensions: no dense part
            dims = 0
    with transaction(factory) as session:
        if not dims:
            delete_model_part(session=session, version=version, name=LSA_PART)
            return 0
        save_model_part(
            session=session,
            version=version,
            name=LSA_PART,
            payload=model.to_bytes(),
            params={
                "dims": dims,
                "articles": n,
                "sample": len(ids),
                "terms": len(model.hashes),
                "power_iterations": settings.power_iterations,
                "seed": SEED,
            },
            now=datetime.now(UTC),
        )
    return dims


def save_encoder_part(
    factory: sessionmaker[Session], settings: DenseSettings, version: int
) -> None:
    """Record (or, with the encoder off, remove) ``version``'s encoder part: its payload the
    JSON of the encoder's settings (``derived.dense.encoder_part`` reads the share of it)."""
    with transaction(factory) as session:
        delete_model_part(session=session, version=version, name=ENCODER_PART)
        if settings.encoder == "lsa":
            return
        params = encoder_params(settings)
        save_model_part(
            session=session,
            version=version,
            name=ENCODER_PART,
            payload=json.dumps(params, sort_keys=True).encode(),
            params=params,
            now=datetime.now(UTC),
        )


def sample_ids(factory: sessionmaker[Session], version: int, n: int, sample: int) -> list[int]:
    """Every ``ceil(n / sample)``-th live article with terms under ``version``, by id."""

    def read(after: int, limit: int) -> list[int]:
        with index_rows(factory) as rows:
            page = rows.live(
                version=version, fields=(), needs_terms=True, after_id=after, limit=limit
            )
        return [r.id for r in page]

    return spread_ids(read, n, sample)


def sample_vectors(
    factory: sessionmaker[Session], version: int, ids: list[int]
) -> tuple[list[npt.NDArray[np.uint64]], list[npt.NDArray[np.float32]]]:
    """The stored vectors of ``ids`` (in id order), as term hashes and weights."""
    hashes, weights = [], []
    for start in range(0, len(ids), PAGE):
        with transaction(factory) as session:
            rows = features_of(
                session=session, version=version, article_ids=ids[start : start + PAGE]
            )
        for row in sorted(rows, key=lambda r: r.article_id):
            h, w = SparseVector.arrays_from_bytes(row.vector)
            hashes.append(h)
            weights.append(w)
    return hashes, weights
