"""The tail of a reindex fits the LSA model on a thread of its own while it builds the other
kinds' indexes and computes the clusters (``pipeline.reindex.dense_fit.start_dense_fit``,
``switch.switch_to``): the same model as a fit on its own, stored before the dense index is
built and before the switch. SQLite and PostgreSQL, real JavaGuide text."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.derived.dense import LSA_PART, DenseKind
from recengine.derived.registry import followers
from recengine.features.lsa import LsaModel, fit_lsa
from recengine.index.follower import Follower
from recengine.pipeline.clusters.upkeep import Deduplicator
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex import dense_fit
from recengine.pipeline.reindex.full import reindex
from recengine.storage.models import ModelPart
from recengine.storage.rows.index_rows import index_rows
from recengine.storage.state import read_state
from tests.conftest import make_settings
from tests.factories import javaguide_records

LSA = {"encoder": "lsa", "min_articles": 10, "dims": 4}
WAIT = 30.0  # seconds an event is waited for before the test fails (never reached when right)


@pytest.fixture
def settings(tmp_path: Path, database_url: str) -> Settings:
    return make_settings(tmp_path, database_url, dense=LSA)


@pytest.fixture
def ingested(factory: sessionmaker[Session], featurizer: Featurizer, data_dir: Path) -> None:
    Ingester(factory, featurizer).ingest_records(javaguide_records(data_dir, 40))


def stored_lsa(factory: sessionmaker[Session]) -> bytes:
    with factory() as session:
        version = read_state(session=session).active_model_version
        payload = session.scalar(
            select(ModelPart.payload).where(
                ModelPart.model_version == version, ModelPart.name == LSA_PART
            )
        )
    assert payload is not None
    return bytes(payload)


def fitted_alone(factory: sessionmaker[Session], settings: Settings) -> bytes:
    """The LSA model of the active version fitted on this thread, nothing beside it."""
    with factory() as session:
        version = read_state(session=session).active_model_version
    assert version is not None
    with index_rows(factory) as rows:
        n = rows.count(version=version, needs_terms=True)
    ids = dense_fit.sample_ids(factory, version, n, settings.dense.sample)
    hashes, weights = dense_fit.sample_vectors(factory, version, ids)
    dims = dense_fit.dense_dims(settings.dense, n)
    return fit_lsa(hashes, weights, dims, settings.dense.max_terms, seed=dense_fit.SEED).to_bytes()


def test_the_lsa_fit_runs_while_the_clusters_are_computed(
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    settings: Settings,
    ingested: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clustering, fitting = threading.Event(), threading.Event()
    fit, cluster_all = dense_fit.fit_lsa, Deduplicator.cluster_all

    def fit_after_clustering_began(*args: Any, **kwargs: Any) -> LsaModel:
        fitting.set()
        if not clustering.wait(WAIT):  # a fit before the clusters waits here forever
            raise AssertionError("the LSA fit did not run beside the clusters")
        return fit(*args, **kwargs)

    def cluster_all_seeing_the_fit(self: Deduplicator, *args: Any, **kwargs: Any) -> Any:
        assert fitting.wait(WAIT)  # the fit began before the clusters
        clustering.set()
        return cluster_all(self, *args, **kwargs)

    monkeypatch.setattr(dense_fit, "fit_lsa", fit_after_clustering_began)
    monkeypatch.setattr(Deduplicator, "cluster_all", cluster_all_seeing_the_fit)
    reindex(factory=factory, featurizer=featurizer, batch_size=16)
    assert clustering.is_set()
    assert stored_lsa(factory) == fitted_alone(factory, settings)  # the same model, bit for bit


def test_the_dense_index_is_published_with_the_model_the_fit_stored(
    factory: sessionmaker[Session], featurizer: Featurizer, settings: Settings, ingested: None
) -> None:
    reindex(factory=factory, featurizer=featurizer, batch_size=16)
    published = followers(settings)[DenseKind.name]
    built = Follower(published.kind, None)  # no file: a build from SQL, with the stored model
    with index_rows(factory) as rows:
        loaded, fresh = published.sync(rows), built.sync(rows)
    assert published.stats.loads == 1 and loaded is not None and fresh is not None
    saved, rebuilt = published.kind.arrays(loaded.index), built.kind.arrays(fresh.index)
    assert saved.keys() == rebuilt.keys()
    for name in saved:
        np.testing.assert_array_equal(saved[name], rebuilt[name])
    dims = LsaModel.from_bytes(stored_lsa(factory)).components.shape[1]
    assert dims == LSA["dims"]


def test_a_failed_fit_fails_the_reindex_and_switches_nothing(
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    ingested: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with factory() as session:
        before = read_state(session=session).active_model_version

    def broken(*args: Any, **kwargs: Any) -> LsaModel:
        raise RuntimeError("out of memory in the fit")

    monkeypatch.setattr(dense_fit, "fit_lsa", broken)
    with pytest.raises(RuntimeError, match="out of memory in the fit"):
        reindex(factory=factory, featurizer=featurizer, batch_size=16)
    with factory() as session:
        assert read_state(session=session).active_model_version == before
