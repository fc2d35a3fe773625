"""The dense vectors of articles as a kind the follower keeps in step with SQL.

Rows: each live article's stored TF-IDF ``vector`` and, where the version has the sentence
encoder (``dense.encoder = "use"``), its stored ``embedding`` (nothing else: the filters and the
exact TF-IDF score come from the related index). The LSA part of a dense vector is the TF-IDF
vector projected with the LSA model fitted for the model version (``model_parts``, name
:data:`LSA_PART`, written by the reindex before the version became active:
``pipeline.reindex.dense_fit``), so the index is rebuildable from SQL, and an article ingested
after the fit is projected with the current model as soon as the follower catches up with it
(which every query does first). The encoder part is the stored embedding (``features.encoder``).
With both, the dense vector is their concatenation weighted by the encoder's share ``s`` (model
part :data:`ENCODER_PART`, ``params["share"]``)::

    z = [sqrt(1 - s) * lsa, sqrt(s) * encoder]      z_a . z_b = (1 - s) cos_lsa + s cos_encoder

so the FAISS inner product and the exact dense score are the blend of the two cosines, with no
second index. A version with the encoder but no LSA model (a corpus under
``dense.min_articles``) has the encoder part alone. A version with neither (a small corpus, a
database reindexed before the dense part existed) gets an index that is *off*: ids only, no
vectors, no candidates.

The held object is a :class:`DenseState`: the models and the index (``index.dense``: a main part
with its FAISS index plus a brute-force delta, compacted in the background in servers). Files
hold the index's arrays and the models' (``model.hashes``, ``model.components``,
``encoder.share``), so a loaded file projects new articles with the model it was built with.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from recengine.config import Settings
from recengine.derived.indexes import follower_options, index_directory
from recengine.features.encoder import DIMS as ENCODER_DIMS
from recengine.features.encoder import from_bytes as embeddings_from_bytes
from recengine.features.lsa import LsaModel
from recengine.features.tfidf import SparseVector
from recengine.index.container import Arrays
from recengine.index.dense import F32, DenseIndex, DenseParams, build_dense, dense_from_arrays
from recengine.index.follower import Follower
from recengine.index.kind import I64, IndexKind, RowReader

LSA_PART = "lsa"
ENCODER_PART = "encoder"


@dataclass(frozen=True)
class EncoderPart:
    """The sentence encoder's place in a version's dense vectors: its ``share`` of the dense
    cosine (the LSA part, when there is one, has the rest)."""

    share: float


@dataclass(frozen=True, eq=False)
class DenseState:
    """A version's LSA model and encoder part (both None: the dense part is off) and the index
    of its vectors."""

    model: LsaModel | None
    index: DenseIndex
    encoder: EncoderPart | None = None

    @property
    def dims(self) -> int:
        return self.index.dims

    def vectors(self, rows: Sequence[Any]) -> F32:
        """Dense vectors of index rows (``float32 (n, dims)``)."""
        return dense_vectors(self.model, self.encoder, rows)


def dims_of(model: LsaModel | None, encoder: EncoderPart | None) -> int:
    return (model.dims if model is not None else 0) + (ENCODER_DIMS if encoder else 0)


def dense_vectors(model: LsaModel | None, encoder: EncoderPart | None, rows: Sequence[Any]) -> F32:
    """``float32 (n, d)``: each row's dense vector (see the module docstring) from its stored
    ``vector`` and ``embedding``."""
    lsa = project(model, [r.vector for r in rows])
    if encoder is None:
        return lsa
    embedded = embeddings_from_bytes([r.embedding for r in rows])
    if model is None:
        return embedded
    scale = np.float32(math.sqrt(1.0 - encoder.share)), np.float32(math.sqrt(encoder.share))
    return np.ascontiguousarray(np.hstack((lsa * scale[0], embedded * scale[1])), np.float32)


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
    fields: ClassVar[tuple[str, ...]] = ("vector", "embedding")
    needs_terms: ClassVar[bool] = True

    def __init__(
        self,
        params: DenseParams,
        model: LsaModel | None = None,
        encoder: EncoderPart | None = None,
    ) -> None:
        self.dense_params = params
        self.model = model
        self.encoder = encoder

    def params(self) -> dict[str, Any]:
        return {"ivf_min": self.dense_params.ivf_min, "ivf_lists": self.dense_params.nlist}

    def for_version(self, reader: RowReader, version: int) -> DenseKind:
        blob = reader.model_part(version=version, name=LSA_PART)
        model = LsaModel.from_bytes(blob) if blob else None
        return DenseKind(self.dense_params, model, encoder_part(reader, version))

    def build(self, pages: Iterable[Sequence[Any]]) -> DenseState:
        dims = dims_of(self.model, self.encoder)
        ids, vectors = [_ids([])], [_none(0, dims)]
        for rows in pages:
            ids.append(_ids(rows))
            vectors.append(dense_vectors(self.model, self.encoder, rows))
        index = build_dense(np.concatenate(ids), np.concatenate(vectors), self.dense_params, dims)
        return DenseState(self.model, index, self.encoder)

    def apply(self, index: DenseState, drops: I64, upserts: Sequence[Any]) -> DenseState:
        added = _ids(upserts)
        changed = np.concatenate([drops, added])
        vectors = index.vectors(upserts)
        changes = index.index.with_changes(changed, added, vectors)
        return DenseState(index.model, changes, index.encoder)

    def arrays(self, index: DenseState) -> Arrays:
        out = index.index.arrays()
        if index.model is not None:
            out["model.hashes"] = index.model.hashes
            out["model.components"] = index.model.components
        if index.encoder is not None:
            out["encoder.share"] = np.array([index.encoder.share], np.float64)
        return out

    def restore(self, arrays: Arrays) -> DenseState:
        arrays = dict(arrays)
        hashes, comp = arrays.pop("model.hashes", None), arrays.pop("model.components", None)
        share = arrays.pop("encoder.share", None)
        model = None
        if hashes is not None and comp is not None:
            if (
                hashes.dtype != np.uint64
                or comp.dtype != np.float32
                or comp.shape[:1] != (len(hashes),)
            ):
                raise ValueError("the dense index's model arrays do not fit together")
            model = LsaModel(hashes.copy(), comp.copy())
        encoder = None
        if share is not None:
            if share.shape != (1,) or not 0.0 < float(share[0]) <= 1.0:
                raise ValueError("the dense index's encoder share is not a share")
            encoder = EncoderPart(float(share[0]))
        dims = dims_of(model, encoder)
        return DenseState(model, dense_from_arrays(arrays, self.dense_params, dims), encoder)

    def size(self, index: DenseState) -> int:
        return len(index.index)

    def describe(self, index: DenseState) -> dict[str, Any]:
        return index.index.describe()

    def compaction_due(self, index: DenseState) -> bool:
        return index.index.compaction_due()

    def compact(self, index: DenseState) -> DenseState:
        return DenseState(index.model, index.index.compacted(), index.encoder)


def encoder_part(reader: RowReader, version: int) -> EncoderPart | None:
    """The encoder part of ``version`` (the stored model part's payload: the JSON of the
    encoder's settings, ``pipeline.featurize.encoder_params``), or None."""
    blob = reader.model_part(version=version, name=ENCODER_PART)
    return None if blob is None else EncoderPart(float(json.loads(blob)["share"]))


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
