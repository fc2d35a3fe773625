"""The dense (LSA) part of related lists, end to end on real JavaGuide text, SQLite and
PostgreSQL: fitted at reindex, stored with the version, blended into the exact ranking and
explained, applied to an article ingested after the fit, off for small corpora."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.derived.dense import LSA_PART, DenseKind, dense_params, project
from recengine.features.lsa import LsaModel
from recengine.features.tfidf import SparseVector
from recengine.index.related.view import RowFilter
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.full import reindex
from recengine.recommend.lists.blend import dense_query, ranked
from recengine.recommend.live import search_params
from recengine.recommend.related import RelatedArticles
from recengine.storage.models import Article, ArticleFeatures, ModelPart
from recengine.storage.rows.features import load_model_part
from recengine.storage.rows.index_rows import SqlIndexRows
from recengine.storage.state import read_state
from tests.conftest import make_settings
from tests.factories import javaguide_records
from tests.recommend.test_related import live_related
from tests.templates import load

DIMS = 16
HELD_BACK = 5  # articles ingested only after the reindex


@pytest.fixture
def settings(tmp_path: Path, database_url: str) -> Settings:
    return make_settings(tmp_path, database_url, dense={"min_articles": 50, "dims": DIMS})


@pytest.fixture
def corpus(data_dir: Path) -> list[dict[str, Any]]:
    return javaguide_records(data_dir, 160)


@pytest.fixture
def service(
    settings: Settings,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    corpus: list[dict[str, Any]],
) -> RelatedArticles:
    load(factory, featurizer, corpus[:-HELD_BACK])
    return live_related(settings, factory)


def vectors_of(factory: sessionmaker[Session]) -> dict[str, bytes]:
    """Every article's stored vector under the active version, by caller id."""
    with factory() as session:
        version = read_state(session=session).active_model_version
        rows = session.execute(
            select(Article.external_id, ArticleFeatures.vector)
            .join(ArticleFeatures, ArticleFeatures.article_id == Article.id)
            .where(ArticleFeatures.model_version == version)
        ).all()
    return {r.external_id: r.vector for r in rows}


def stored(factory: sessionmaker[Session]) -> tuple[LsaModel, dict[str, bytes]]:
    """The active version's LSA model and every article's stored vector."""
    with factory() as session:
        version = read_state(session=session).active_model_version
        assert version is not None
        part = load_model_part(session=session, version=version, name=LSA_PART)
    assert part is not None
    return LsaModel.from_bytes(part[0]), vectors_of(factory)


def cosine(a: bytes, b: bytes) -> float:
    x, y = SparseVector.from_bytes(a), SparseVector.from_bytes(b)
    _, i, j = np.intersect1d(x.hashes, y.hashes, return_indices=True)
    return float(np.dot(x.weights[i].astype(np.float64), y.weights[j]))


def ask(service: RelatedArticles, factory: sessionmaker[Session], aid: str, **kw: Any) -> Any:
    with factory() as session:
        return service.related(aid, session=session, **kw)


def test_the_reindex_stores_a_model_with_the_version_and_drops_the_old_one(
    service: RelatedArticles,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    corpus: list[dict[str, Any]],
) -> None:
    with factory() as session:
        version = read_state(session=session).active_model_version
        assert version is not None
        payload, params = load_model_part(session=session, version=version, name=LSA_PART) or (
            b"",
            {},
        )
    model = LsaModel.from_bytes(payload)
    assert model.dims == DIMS and params["dims"] == DIMS
    assert params["articles"] == params["sample"] == len(corpus) - HELD_BACK
    reindex(factory=factory, featurizer=featurizer)
    with factory() as session:
        parts = session.execute(select(ModelPart.model_version, ModelPart.name)).all()
        active = read_state(session=session).active_model_version
    assert [tuple(p) for p in parts] == [(active, LSA_PART)] and active != version


def test_scores_blend_both_cosines_and_the_reasons_add_up(
    service: RelatedArticles, factory: sessionmaker[Session], corpus: list[dict[str, Any]]
) -> None:
    model, vectors = stored(factory)
    w = service.settings.related.dense_weight
    service.settings = service.settings.model_copy(
        update={"related": service.settings.related.model_copy(update={"explain_terms": 128})}
    )
    for query in (corpus[0]["id"], corpus[40]["id"], corpus[99]["id"]):
        body = ask(service, factory, query, k=10, min_score=0)
        assert len(body["items"]) == 10
        z = project(model, [vectors[query], *(vectors[e["id"]] for e in body["items"])])
        for e, zd in zip(body["items"], z[1:], strict=True):
            dense = w * float(np.dot(z[0].astype(np.float64), zd))
            expected = (1 - w) * cosine(vectors[query], vectors[e["id"]]) + dense
            assert e["score"] == pytest.approx(expected, abs=2e-6)
            assert e["reasons"]["dense"] == pytest.approx(dense, abs=2e-6)
            terms = sum(t["weight"] for t in e["reasons"]["shared_terms"])
            assert terms + e["reasons"]["dense"] == pytest.approx(e["score"], abs=1e-4)
        scores = [e["score"] for e in body["items"]]
        assert scores == sorted(scores, reverse=True)


def test_dense_neighbours_join_the_candidates_and_filters_still_hold(
    service: RelatedArticles, factory: sessionmaker[Session], corpus: list[dict[str, Any]]
) -> None:
    query = corpus[12]["id"]
    with factory() as session:
        snap = service.index.current(session=session)
        assert snap.dense is not None and snap.dense.model is not None
        qid = session.scalar(select(Article.id).where(Article.external_id == query))
        assert qid is not None
        pos = snap.view.locate(qid)
        assert pos is not None
        h, wts = snap.view.vector(*pos)
        z = snap.dense.model.project([h], [wts])[0]
        params = search_params(service.settings, 5)  # 5 TF-IDF candidates
        excluded = RowFilter(exclude_ids=np.array([qid], np.int64))
        alone, _ = ranked(snap.view, h, wts, params, excluded, qid, None)
        both, _ = ranked(
            snap.view, h, wts, params, excluded, qid, dense_query(snap.dense.index, z, 0.3, 20)
        )
    assert len(alone) == 5 and alone.dense is None
    assert len(both) > 5 and set(alone.ids.tolist()) <= set(both.ids.tolist())
    assert both.dense is not None and np.all(np.diff(both.scores) <= 0)
    # filters apply to dense candidates too; paging is a slice of one ranking
    some = [r["id"] for r in corpus[20:60]]
    body = ask(service, factory, query, k=30, min_score=0, exclude=some)
    assert body["items"] and not set(some) & {e["id"] for e in body["items"]}
    whole = ask(service, factory, query, k=20, min_score=0)["items"]
    assert ask(service, factory, query, k=10, offset=10, min_score=0)["items"] == whole[10:]


def test_a_new_article_is_projected_with_the_current_model_right_after_ingest(
    service: RelatedArticles,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    corpus: list[dict[str, Any]],
) -> None:
    ask(service, factory, corpus[0]["id"])  # the indexes are built and in use
    fresh = corpus[-HELD_BACK:]
    Ingester(factory, featurizer).ingest_records(fresh)  # no reindex: the model stays
    model, vectors = stored(factory)
    body = ask(service, factory, fresh[0]["id"], k=5, min_score=0)
    assert len(body["items"]) == 5 and all(e["reasons"]["dense"] != 0 for e in body["items"])
    with factory() as session:
        snap = service.index.current(session=session)
        assert snap.dense is not None
        ids = (
            session.execute(
                select(Article.id)
                .where(Article.external_id.in_([r["id"] for r in fresh]))
                .order_by(Article.id)
            )
            .scalars()
            .all()
        )
        found, got = snap.dense.index.lookup(np.array(ids, np.int64))
    assert found.all()
    want = project(model, [vectors[r["id"]] for r in fresh])
    assert np.array_equal(got, want)  # what the model gives, bit for bit
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    # and a fresh build from SQL (another process starting now) holds the same vectors
    kind = DenseKind(dense_params(service.settings))
    with factory() as session:
        rows = SqlIndexRows(session)
        version = read_state(session=session).active_model_version
        assert version is not None
        built = kind.for_version(rows, version).build(
            [
                rows.live(
                    version=version, fields=kind.fields, needs_terms=True, after_id=0, limit=10_000
                )
            ]
        )
    assert np.array_equal(built.index.lookup(np.array(ids, np.int64))[1], want)


def test_small_corpora_have_no_dense_part(
    tmp_path: Path,
    database_url: str,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    corpus: list[dict[str, Any]],
) -> None:
    settings = make_settings(tmp_path, database_url)  # dense.min_articles = 100
    Ingester(factory, featurizer).ingest_records(corpus[:60])
    reindex(factory=factory, featurizer=Featurizer(settings, featurizer.tokenizer))
    with factory() as session:
        assert session.scalar(select(func.count()).select_from(ModelPart)) == 0
    service = live_related(settings, factory)
    vectors = vectors_of(factory)
    body = ask(service, factory, corpus[3]["id"], k=5, min_score=0)
    for e in body["items"]:
        assert e["reasons"]["dense"] == 0.0
        assert e["score"] == pytest.approx(
            cosine(vectors[corpus[3]["id"]], vectors[e["id"]]), abs=1e-6
        )
    assert service.index.dense_stats()["dims"] == 0
