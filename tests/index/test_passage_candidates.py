"""The passage index as the second candidate source of clusters: excerpts and digests that the
radius search misses join their source at ingest, and stay there through a full reindex, an
incremental reindex and a full recluster (the same candidates everywhere)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.features.neardup import NearDupCriterion
from recengine.index.neardup.candidates import Candidates
from recengine.index.neardup.passages import PassageIndex
from recengine.index.neardup.radius import NearDupIndex
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.full import reindex
from recengine.pipeline.reindex.incremental import reindex_incremental
from recengine.storage.db import transaction
from recengine.storage.models import Article
from recengine.storage.state import begin_write
from tests.neardup_helpers import check_invariants, clusters, corpus


def partial_copies(bases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An excerpt (first 60% of the paragraphs + a "read on" link) of the even bases, a digest
    (the whole post + a long unrelated piece) of the odd ones; published later."""
    out = []
    for i, base in enumerate(bases):
        paragraphs = base["content"].split("\n\n")
        if i % 2 == 0:
            body = "\n\n".join(paragraphs[: max(1, len(paragraphs) * 6 // 10)]) + "\n\n……阅读全文"
            kind = "excerpt"
        else:
            other = bases[(i + len(bases) // 2) % len(bases)]["content"]
            body = base["content"] + "\n\n相关阅读\n\n" + other[: len(other) // 3]
            kind = "digest"
        out.append(
            {
                **base,
                "id": f"{kind}-{base['id']}",
                "content": body,
                "published_at": "2024-06-01T08:00:00+00:00",
            }
        )
    return out


def _found(factory: sessionmaker[Session], copies: list[dict[str, Any]]) -> int:
    got = clusters(factory)
    return sum(got.get(c["id"], ("",))[0] == c["id"].split("-", 1)[1] for c in copies)


def test_partial_copies_join_their_source_through_the_passages(
    factory: sessionmaker[Session], featurizer: Featurizer, settings: Settings, data_dir: Path
) -> None:
    bases, _ = corpus(data_dir, 40, 0)
    copies = partial_copies(bases[:16])
    ingester = Ingester(factory, featurizer)
    ingester.ingest_records(bases)
    reindex(factory=factory, featurizer=featurizer)
    ingester.ingest_records(copies)
    with factory() as session:
        both = ingester.dedup.synced(session)
        ids = dict(session.execute(select(Article.external_id, Article.id)).all())
    in_radius = [
        ids[c["id"].split("-", 1)[1]] in both.of_radius(ids[c["id"]]).tolist() for c in copies
    ]
    assert not all(in_radius), "every copy is within the radius: the test proves nothing"
    assert _found(factory, copies) >= 14
    check_invariants(factory, NearDupCriterion.from_settings(settings))
    at_ingest = canonicals(factory)

    reindex(factory=factory, featurizer=featurizer)  # a new model: distances change, not clusters
    assert canonicals(factory) == at_ingest
    ingester.ingest_records([{**bases[20], "title": bases[20]["title"] + "（修订）"}])
    reindex_incremental(factory=factory, featurizer=featurizer)
    after = clusters(factory)
    with transaction(factory) as session:
        begin_write(session=session)
        ingester.dedup.recluster(session)
    assert clusters(factory) == after
    assert canonicals(factory) == at_ingest


def canonicals(factory: sessionmaker[Session]) -> dict[str, str]:
    return {member: canonical for member, (canonical, _) in clusters(factory).items()}


def test_candidates_are_the_union_of_both_sources() -> None:
    radius = NearDupIndex(k=3)
    radius.add(np.array([1, 2, 3, 4]), np.array([0, 0b111, 0xFFFF, 0xFFFF0000], np.uint64))
    passages = PassageIndex(stop_df=2)
    passages.add(
        [1, 3, 4, 9],  # 9 has passages but no fingerprint: it is not a candidate
        [
            np.array([5], np.uint64),
            np.array([5, 6], np.uint64),
            np.array([7], np.uint64),
            np.array([6], np.uint64),
        ],
    )
    both = Candidates(radius, passages)
    assert both.of(1).tolist() == [2, 3]  # 2 by the radius, 3 by a passage
    assert both.of(3).tolist() == [1]
    assert both.of(4).tolist() == []
    pairs = both.pairs()
    assert list(zip(pairs.a.tolist(), pairs.b.tolist(), strict=True)) == [(1, 2), (1, 3)]
    assert pairs.distances.tolist() == [3, 16]
    assert Candidates(radius).pairs().a.tolist() == [1]
