"""The near-duplicate radius index as a kind the follower keeps in step with SQL.

Rows: ``id`` and ``fingerprint`` (``uint64``) of every live article whose text has terms
(an article without terms has fingerprint 0, which says nothing). The file holds only the live
``ids int64 (n,)`` and ``fingerprints uint64 (n,)`` sorted by id, not FAISS's hash tables:
rebuilding the tables from the arrays costs about as much as reading serialised tables would
(both linear), and the file stays small (16 bytes per article) and independent of the FAISS
version.

:class:`CanonicalKind` is the same index over the canonicals alone (articles with no member row
under the version: canonicals of clusters and singletons), what a write searches for the
canonicals it may join (``pipeline.clusters.upkeep``): a templated page type puts every page within
the radius of every other, and the full index then answers a new page with the whole cluster.
An article's presence there changes when its member row comes or goes, which another article's
write can cause (a takeover, a canonical deleted): writers give such articles the write's
``seq`` (``storage.rows.overrides.mark_changed``), so every process follows the change like an edit.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

import numpy as np

from recengine.config import Settings
from recengine.derived.indexes import follower_options, index_directory
from recengine.index.container import Arrays
from recengine.index.follower import Follower
from recengine.index.kind import I64, IndexKind
from recengine.index.neardup.radius import NearDupIndex


class NearDupKind(IndexKind[NearDupIndex]):
    """Exact radius-``k`` index over fingerprints (``index.neardup.radius.NearDupIndex``).

    Args:
        k: the largest radius searches may ask for.
    """

    name: ClassVar[str] = "neardup"
    fields: ClassVar[tuple[str, ...]] = ("fingerprint",)
    needs_terms: ClassVar[bool] = True

    def __init__(self, k: int) -> None:
        self.k = k

    def params(self) -> dict[str, Any]:
        return {"k": self.k}

    def build(self, pages: Iterable[Sequence[Any]]) -> NearDupIndex:
        id_parts, fp_parts = [np.zeros(0, np.int64)], [np.zeros(0, np.uint64)]
        for rows in pages:
            id_parts.append(np.fromiter((r.id for r in rows), np.int64, len(rows)))
            fp_parts.append(np.fromiter((r.fingerprint for r in rows), np.uint64, len(rows)))
        index = NearDupIndex(self.k)
        index.add(np.concatenate(id_parts), np.concatenate(fp_parts))
        return index

    def apply(self, index: NearDupIndex, drops: I64, upserts: Sequence[Any]) -> NearDupIndex:
        index.remove(drops)
        if upserts:
            index.add(
                np.fromiter((r.id for r in upserts), np.int64, len(upserts)),
                np.fromiter((r.fingerprint for r in upserts), np.uint64, len(upserts)),
            )
        return index

    def arrays(self, index: NearDupIndex) -> Arrays:
        ids, fps = index.arrays()
        return {"ids": ids, "fingerprints": fps}

    def restore(self, arrays: Arrays) -> NearDupIndex:
        try:
            ids, fps = arrays["ids"], arrays["fingerprints"]
        except KeyError as exc:
            raise ValueError(f"no {exc} array") from None
        if ids.dtype != np.int64 or fps.dtype != np.uint64:
            raise ValueError(f"arrays of {ids.dtype} / {fps.dtype}, expected int64 / uint64")
        index = NearDupIndex(self.k)
        index.add(ids, fps)  # copies: the mapping is released
        return index

    def size(self, index: NearDupIndex) -> int:
        return len(index)

    def nbytes(self, index: NearDupIndex) -> int:
        return index.memory_bytes()  # the FAISS tables, not only the saved arrays


def neardup_follower(settings: Settings) -> Follower[NearDupIndex]:
    """A process's near-duplicate index (radius ``features.hamming_k``), following SQL; saved
    every ``index.save_after`` changes (the file is small)."""
    return Follower(
        NearDupKind(settings.features.hamming_k),
        index_directory(settings, NearDupKind.name),
        save_after=settings.index.save_after,
        **follower_options(settings),
    )


class CanonicalKind(NearDupKind):
    """:class:`NearDupKind` over the articles with no member row under the version."""

    name: ClassVar[str] = "canonicals"
    canonicals_only: ClassVar[bool] = True
    reads_clusters: ClassVar[bool] = True


def canonical_follower(settings: Settings) -> Follower[NearDupIndex]:
    """A process's radius index of canonicals (see :class:`CanonicalKind`), following SQL."""
    return Follower(
        CanonicalKind(settings.features.hamming_k),
        index_directory(settings, CanonicalKind.name),
        save_after=settings.index.save_after,
        **follower_options(settings),
    )
