"""The article a related list is about: its id, stored vector, fingerprint and labels, held
beside the snapshot's index (its briefs and its rows) or read from SQL, and its dense vector."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from sqlalchemy.orm import Session

from recengine.derived.rows import epoch
from recengine.errors import ModelMissing, NotFound
from recengine.features.tfidf import EMPTY_VECTOR, SparseVector
from recengine.recommend.lists.explain import Namer
from recengine.recommend.live import Snapshot
from recengine.storage.rows.index_source import query_article
from recengine.storage.state import read_state


@dataclass(frozen=True)
class Query:
    """The article a list is about: internal id, vector, fingerprint, labels."""

    id: int
    external_id: str
    vector: SparseVector
    fingerprint: int
    category: str | None
    tags: tuple[str, ...]
    published: int  # Unix seconds, NO_DATE when unknown
    # the vector's terms at positions, when it is held by hashes only (its terms then blank)
    names: Namer | None = None


def load_query(session: Session, snap: Snapshot, external_id: str) -> Query:
    """The query article with its stored vector: held beside the snapshot's index (its
    briefs and rows), else read from SQL (the active model's, else the snapshot's)."""
    held = held_query(snap, external_id)
    if held is not None:
        return held
    row = query_article(session=session, external_id=external_id, version=snap.version)
    if row is not None and row.vector is None:
        active = read_state(session=session).active_model_version
        if active != snap.version:  # a reindex switched models; the index catches up soon
            row = query_article(session=session, external_id=external_id, version=active)
    if row is None:
        raise NotFound.article(external_id)
    if row.vector is None:
        raise ModelMissing(f"article {external_id!r} has no features yet: run `recengine reindex`")
    vector = SparseVector.from_bytes(row.vector) if row.vector else EMPTY_VECTOR
    tags = tuple(t for t in (row.tags or ()) if isinstance(t, str))
    published = epoch(row.published_at)
    return Query(row.id, row.external_id, vector, row.fingerprint, row.category, tags, published)


def held_query(snap: Snapshot, external_id: str) -> Query | None:
    """The query article as the snapshot holds it (its brief and its index row: the stored
    vector's hashes and weights, their terms named by the briefs' vocabulary), or None when
    it does not (no briefs, or an article the index does not hold: SQL says why)."""
    if snap.briefs is None:
        return None
    article = snap.briefs.find(external_id)
    where = None if article is None else snap.view.locate(article)
    brief = None if article is None else snap.briefs.get(article)
    if where is None or brief is None:
        return None
    hashes, weights = snap.view.vector(*where)
    vocabulary = snap.briefs.vocabulary
    if not vocabulary.knows(hashes):
        return None
    fingerprint = int(snap.view.parts[where[0]].segment.fingerprints[where[1]])
    vector = SparseVector(("",) * len(hashes), hashes, weights) if len(hashes) else EMPTY_VECTOR

    def names(positions: npt.NDArray[np.intp]) -> list[str]:
        return vocabulary.names(hashes[positions]) or []

    return Query(
        brief.id, brief.external_id, vector, fingerprint, brief.category, brief.tags,
        brief.published, names,
    )  # fmt: skip


def query_dense(snap: Snapshot, query: Query) -> npt.NDArray[np.float32] | None:
    """The query article's dense vector: its stored vector projected with the snapshot's
    model (an article ingested a moment ago included), and with the encoder part its row of
    the dense index (which holds every live article with terms as of the snapshot: the stored
    encoder vector is not read again); None without a dense part."""
    dense = snap.dense
    if dense is None or (dense.model is None and dense.encoder is None):
        return None
    if dense.encoder is not None:
        found, rows = dense.index.lookup(np.array([query.id], np.int64))
        return rows[0] if found[0] else None
    if dense.model is None:
        return None
    z: npt.NDArray[np.float32] = dense.model.project([query.vector.hashes], [query.vector.weights])[
        0
    ]
    return z
