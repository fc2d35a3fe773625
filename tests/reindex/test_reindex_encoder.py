"""A full reindex with the sentence encoder on reuses the stored vectors of texts it has
encoded before (``versions.reusable_version``, ``Featurizer.analyze_texts(known=...)``): the
encoder is most of such a reindex's CPU and gives the same vector for the same lead. SQLite and
PostgreSQL, real JavaGuide text."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.features.encoder import from_bytes
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.full import reindex
from recengine.storage.models import Article
from recengine.text.words.tokenize import Tokenizer
from tests.factories import encoder_settings, javaguide_records
from tests.recommend.test_related_encoder import embeddings_of, expected

DIMS = 8


@pytest.fixture
def settings(tmp_path: Path, database_url: str) -> Settings:
    return encoder_settings(tmp_path, database_url, DIMS)


@pytest.fixture
def corpus(data_dir: Path) -> list[dict[str, Any]]:
    return javaguide_records(data_dir, 60)


def counting(featurizer: Featurizer, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many texts each call of ``featurizer.embed`` encodes (in this process)."""
    calls: list[int] = []
    embed = featurizer.embed

    def counted(parts: Sequence[tuple[str, str]]) -> list[bytes]:
        calls.append(len(parts))
        return embed(parts)

    monkeypatch.setattr(featurizer, "embed", counted)
    return calls


def test_a_full_reindex_encodes_only_the_texts_it_has_not_seen(
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    corpus: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    Ingester(factory, featurizer).ingest_records(corpus)
    reindex(factory=factory, featurizer=featurizer)
    edited = [{**corpus[3], "content": "新的开头。" + corpus[3]["content"]}]
    Ingester(factory, featurizer).ingest_records(edited)  # encoded at ingest, under the version
    before = embeddings_of(factory)
    with factory.begin() as session:  # a stored hash that is not the text's: encoded again
        session.execute(
            update(Article).where(Article.external_id == corpus[5]["id"]).values(text_hash="0")
        )
    calls = counting(featurizer, monkeypatch)
    reindex(factory=factory, featurizer=featurizer)
    assert sum(calls) == 1  # corpus[5] alone
    after = embeddings_of(factory)
    again = corpus[5]["id"]  # encoded in another micro-batch: the same to float16 rounding
    assert {k: v for k, v in after.items() if k != again} == {
        k: v for k, v in before.items() if k != again
    }
    records = [*corpus[:3], edited[0], *corpus[4:]]
    got = from_bytes([after[r["id"]] for r in records])
    np.testing.assert_allclose(got, expected(records, 200), atol=2e-3)


def test_vectors_of_other_encoder_settings_are_not_reused(
    tmp_path: Path,
    database_url: str,
    factory: sessionmaker[Session],
    tokenizer: Tokenizer,
    corpus: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    old = Featurizer(encoder_settings(tmp_path, database_url, DIMS), tokenizer)
    Ingester(factory, old).ingest_records(corpus)
    reindex(factory=factory, featurizer=old)
    new = Featurizer(encoder_settings(tmp_path, database_url, DIMS, lead_chars=300), tokenizer)
    calls = counting(new, monkeypatch)
    reindex(factory=factory, featurizer=new)
    assert sum(calls) == len(corpus)
    stored = embeddings_of(factory)
    got = from_bytes([stored[r["id"]] for r in corpus])
    np.testing.assert_allclose(got, expected(corpus, 300), atol=2e-3)
