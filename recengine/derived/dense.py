"""The dense (LSA) vectors of articles as a kind the follower keeps in step with SQL.

Rows: each live article's stored TF-IDF ``vector`` (nothing else: the filters and the exact
TF-IDF score come from the related index). Each becomes its dense vector by projection with the
LSA model fitted for the model version (``model_parts``, name :data:`LSA_PART`, written by the
reindex before the version became active: ``pipeline.reindex.dense_fit``), so the index is
rebuildable from SQL, and an article ingested after the fit is projected with the current model as
soon as the follower catches up with it (which every query does first). A version without a fitted
model (a corpus under ``dense.min_articles``, a database reindexed before the dense part existed)
gets an index that is *off*: ids only, no vectors, no candidates.

The held object is a :class:`DenseState`: the model and the index (``index.dense``: a main part
with its FAISS index plus a brute-force delta, compacted in the background in servers). Files
hold the index's arrays and the model's (``model.hashes``, ``model.components``), so a loaded
file projects new articles with the model it was built with.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from recengine.config import Settings
from recengine.derived.indexes import follower_options, index_directory
from recengine.features.lsa import LsaModel
from recengine.features.tfidf import SparseVector
from recengine.index.container import Arrays
from recengine.index.dense import F32, DenseIndex, DenseParams, build_dense, dense_from_arrays
from recengine.index.follower import Follower
from recengine.index.kind import I64, IndexKind, RowReader

LSA_PART = "lsa"


@dataclass(frozen=True, eq=False)
class DenseState:
    """A version's LSA model (None: the dense part is off) and the index of its vectors."""

    model: LsaModel | None
    index: DenseIndex

    @property
    def dims(self) -> int:
        return self.index.dims

    def project(self, vectors: Sequence[bytes]) -> F32:
        """Dense vectors of stored TF-IDF vectors (``float32 (n, dims)``)."""
        return project(self.model, vectors)


def project(model: LsaModel | None, vectors: Sequence[bytes]) -> F32:
    """``float32 (n, d)``: the stored vectors (``SparseVector.to_bytes``) projected
    (``(n, 0)`` without a model)."""
    if model is None:
        return np.zeros((len(vectors), 0), np.float32)
    arrays = [SparseVector.arrays_from_bytes(v) for v in vectors]
    return model.project([h for h, _ in arrays], [w for _, w in arrays])


class DenseKind(IndexKind[DenseState]):
    """Dense vectors of articles (see the module docstring).

    Args:
        params: the FAISS part's settings.
        model: the model of the version being built (:meth:`for_version` reads it).
    """

    name: ClassVar[str] = "dense"
    fields: ClassVar[tuple[str, ...]] = ("vector",)
    needs_terms: ClassVar[bool] = True

    def __init__(self, params: DenseParams, model: LsaModel | None = None) -> None:
        self.dense_params = params
        self.model = model

    def params(self) -> dict[str, Any]:
        return {"ivf_min": self.dense_params.ivf_min, "ivf_lists": self.dense_params.nlist}

    def for_version(self, reader: RowReader, version: int) -> DenseKind:
        blob = reader.model_part(version=version, name=LSA_PART)
        return DenseKind(self.dense_params, LsaModel.from_bytes(blob) if blob else None)

    def build(self, pages: Iterable[Sequence[Any]]) -> DenseState:
        dims = self.model.dims if self.model is not None else 0
        ids, vectors = [_ids([])], [_none(0, dims)]
        for rows in pages:
            ids.append(_ids(rows))
            vectors.append(project(self.model, [r.vector for r in rows]))
        index = build_dense(np.concatenate(ids), np.concatenate(vectors), self.dense_params, dims)
        return DenseState(self.model, index)

    def apply(self, index: DenseState, drops: I64, upserts: Sequence[Any]) -> DenseState:
        added = _ids(upserts)
        changed = np.concatenate([drops, added])
        vectors = index.project([r.vector for r in upserts])
        return DenseState(index.model, index.index.with_changes(changed, added, vectors))

    def arrays(self, index: DenseState) -> Arrays:
        out = index.index.arrays()
        if index.model is not None:
            out["model.hashes"] = index.model.hashes
            out["model.components"] = index.model.components
        return out

    def restore(self, arrays: Arrays) -> DenseState:
        arrays = dict(arrays)
        hashes, comp = arrays.pop("model.hashes", None), arrays.pop("model.components", None)
        model = None
        if hashes is not None and comp is not None:
            if (
                hashes.dtype != np.uint64
                or comp.dtype != np.float32
                or comp.shape[:1] != (len(hashes),)
            ):
                raise ValueError("the dense index's model arrays do not fit together")
            model = LsaModel(hashes.copy(), comp.copy())
        dims = model.dims if model is not None else 0
        return DenseState(model, dense_from_arrays(arrays, self.dense_params, dims))

    def size(self, index: DenseState) -> int:
        return len(index.index)

    def describe(self, index: DenseState) -> dict[str, Any]:
        return index.index.describe()

    def compaction_due(self, index: DenseState) -> bool:
        return index.index.compaction_due()

    def compact(self, index: DenseState) -> DenseState:
        return DenseState(index.model, index.index.compacted())


def dense_params(settings: Settings) -> DenseParams:
    d = settings.dense
    return DenseParams(
        ivf_min=d.ivf_min,
        nlist=d.ivf_lists,
        nprobe=d.ivf_probe,
        half=d.ivf_half,
        delta_max_rows=settings.related.delta_max_rows,
    )


def dense_follower(settings: Settings, *, background: bool) -> Follower[DenseState]:
    """A process's dense index following SQL; saved after builds and compactions (as the
    related index); ``background``: open new versions and compact in a thread."""
    return Follower(
        DenseKind(dense_params(settings)),
        index_directory(settings, DenseKind.name),
        save_after=None,
        background=background,
        **follower_options(settings),
    )


def _ids(rows: Sequence[Any]) -> I64:
    return np.fromiter((r.id for r in rows), np.int64, len(rows))


def _none(n: int, dims: int) -> F32:
    return np.zeros((n, dims), np.float32)
