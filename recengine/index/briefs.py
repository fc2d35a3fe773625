"""What a list shows of each article, and the article's near-duplicate cluster, held in memory
beside the related index, so that a related list reads no SQL for its items, its query article
or its suppression (``derived.briefs`` keeps it in step with SQL like every derived index).

One :class:`Brief` per live article of a model version: the caller's id, title, url, card
(image, summary and the rule it was derived by), publication time (as shown and in Unix
seconds), category, tags, and the article's cluster: the canonical it is a member of, with the
rule, figure and distance of its join (a canonical or a singleton is its own cluster, the
rule ``None``), as ``cluster_members`` holds them under the version. Beside them, the names of
the terms of every article's stored vector (``index.vocabulary``: the index holds their hashes
only), which name the shared terms of a list about an article.

Layout (:class:`Briefs`, immutable): a **main** part of columns, and the **changes** applied
since, in a dict. Array contracts of the main part:

* ``ids`` ``int64 (n,)`` ascending, unique; ``clusters`` ``int64 (n,)`` (the canonical's id,
  or the article's own);
* ``offsets`` ``int64 (n + 1,)`` into ``blob`` ``uint8 (m,)``: each row's record, one UTF-8
  JSON array of the :class:`Brief`'s fields but the first and last (id and cluster, which
  are columns);
* ``keys`` ``uint64 (n,)`` ascending: a 64-bit hash of each row's caller id, ``key_rows``
  ``int64 (n,)`` the row of each (equal hashes are all tried: the record says which is which).

A change (:meth:`Briefs.with_changes`) copies only the dict of changes (ids -> record, or None
for an article gone), so a query never sees half of one; past ``delta_max`` changed articles,
:meth:`Briefs.compacted` writes new columns (a pass over the blob, by chunks of rows). Records
are decoded only for the articles a list shows (a few microseconds each), and held decoded
(``Briefs.decoded``, by row of the main part, which never changes) for the next list.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from recengine.index.container import Arrays
from recengine.index.held import Held
from recengine.index.ids import IdRows
from recengine.index.vocabulary import Vocabulary, build_vocabulary, vocabulary_from_arrays

I64 = npt.NDArray[np.int64]
U64 = npt.NDArray[np.uint64]
NO_ARTICLE = -1
CHUNK = 65_536  # rows per step of a compaction's copy of the blob
# Decoded briefs held (~1 KB each): a list decodes ~15 (its items, its query, its cuts), and
# popular articles come back in many lists; decoding one costs ~5 us (JSON)
DECODED_HELD = 16_384


class Brief(NamedTuple):
    """One article as a list shows and suppresses it (see the module docstring).

    ``published_at``: UTC text (``recengine.times.utc_text``) or None; ``published``: Unix
    seconds (``index.related.segment.NO_DATE`` when unknown); ``canonical``: the canonical of
    the article's cluster (its own id when it is a canonical or alone); ``rule`` / ``score`` /
    ``distance``: its member row's (None / None / 0 when it has none); ``seq``: the article's
    last change's (what keys a kept text, ``text.neardup.kept``)."""

    id: int
    external_id: str
    title: str
    url: str | None
    card_image: str | None
    card_summary: str | None
    card_rule: str | None
    published_at: str | None
    published: int
    category: str | None
    tags: tuple[str, ...]
    rule: str | None
    score: float | None
    distance: int
    seq: int
    canonical: int

    @property
    def member(self) -> bool:
        """Whether the article is a member of another article's cluster."""
        return self.canonical != self.id


def key_hash(external_id: str) -> int:
    """The 64-bit key of a caller id (stable across processes and runs)."""
    return int.from_bytes(hashlib.blake2b(external_id.encode(), digest_size=8).digest(), "little")


def encode(brief: Brief) -> bytes:
    return json.dumps(brief[1:-1], ensure_ascii=False, separators=(",", ":")).encode()


def decode(article_id: int, record: bytes | memoryview, canonical: int) -> Brief:
    values = json.loads(bytes(record))
    values[9] = tuple(values[9])
    return Brief._make([article_id, *values, canonical])


@dataclass(frozen=True, eq=False)
class Briefs:
    """Every live article's :class:`Brief` (see the module docstring). Immutable."""

    ids: I64
    clusters: I64
    offsets: I64
    blob: npt.NDArray[np.uint8]
    keys: U64
    key_rows: I64
    changes: Mapping[int, Brief | None]
    changed_keys: Mapping[str, int]  # caller id -> internal id, of the changes' briefs
    vocabulary: Vocabulary
    # live briefs, when the caller counted them (a change: the count before, moved by the
    # change's own articles), else counted here over the changes (a load, a compaction)
    size: int | None = field(default=None, repr=False)
    # main-part records decoded already, by row: shared by the briefs made from these by
    # :meth:`with_changes` (the same main part), emptied past :data:`DECODED_HELD`
    decoded: Held[int, Brief] = field(default_factory=lambda: Held(DECODED_HELD), repr=False)
    _rows: IdRows = field(init=False, repr=False)
    _size: int = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_rows", IdRows(self.ids))
        if self.size is not None:
            object.__setattr__(self, "_size", self.size)
            return
        live = len(self.ids) + sum(
            1 for i, b in self.changes.items() if b is not None and self._row(i) < 0
        )
        gone = sum(1 for i, b in self.changes.items() if b is None and self._row(i) >= 0)
        object.__setattr__(self, "_size", live - gone)

    def __len__(self) -> int:
        size: int = self._size
        return size

    def _row(self, article_id: int) -> int:
        rows: IdRows = self._rows
        return rows.find_one(article_id)

    def get(self, article_id: int) -> Brief | None:
        """The article's brief; None when it is not live under the version."""
        if article_id in self.changes:
            return self.changes[article_id]
        row = self._row(article_id)
        if row < 0:
            return None
        return self.decoded.get(row, lambda: self._decode(article_id, row))

    def _decode(self, article_id: int, row: int) -> Brief:
        record = self.blob[self.offsets[row] : self.offsets[row + 1]]
        return decode(article_id, record.data, int(self.clusters[row]))

    def many(self, article_ids: Iterable[int]) -> dict[int, Brief]:
        """The briefs of those of ``article_ids`` that are live, by id."""
        out = {}
        for a in article_ids:
            found = self.get(int(a))
            if found is not None:
                out[int(a)] = found
        return out

    def find(self, external_id: str) -> int | None:
        """The internal id of the live article with this caller id, or None."""
        if external_id in self.changed_keys:
            return self.changed_keys[external_id]
        key = np.uint64(key_hash(external_id))
        lo = int(np.searchsorted(self.keys, key, side="left"))
        hi = int(np.searchsorted(self.keys, key, side="right"))
        for row in self.key_rows[lo:hi]:
            article_id = int(self.ids[row])
            if article_id in self.changes:
                continue  # replaced or gone: the changes answer for it
            found = self.get(article_id)
            if found is not None and found.external_id == external_id:
                return article_id
        return None

    def canonicals(self, article_ids: I64) -> I64:
        """``int64 (n,)``: each article's cluster (its canonical, or itself);
        :data:`NO_ARTICLE` for one not live."""
        rows: IdRows = self._rows
        at = rows.find(article_ids)
        out = np.full(len(at), NO_ARTICLE, np.int64)
        out[at >= 0] = self.clusters[at[at >= 0]]
        if self.changes:
            for j, a in enumerate(article_ids.tolist()):
                if a in self.changes:
                    b = self.changes[a]
                    out[j] = NO_ARTICLE if b is None else b.canonical
        return out

    def with_changes(
        self, drops: I64, upserts: Sequence[Brief], terms: Iterable[tuple[int, str]] = ()
    ) -> Briefs:
        """These briefs without ``drops`` and with ``upserts`` (added or replacing), and the
        ``terms`` (hash, name) of the upserts' vectors."""
        changes = dict(self.changes)
        keys = dict(self.changed_keys)
        size = len(self)  # moved by each article of the change: O(change), not O(changes held)
        for a in drops.tolist():
            old = changes.get(a) if a in changes else self.get(a)
            if old is not None and keys.get(old.external_id) == a:
                del keys[old.external_id]
            size -= old is not None
            changes[a] = None
        for b in upserts:
            old = changes.get(b.id) if b.id in changes else self.get(b.id)
            if old is not None and keys.get(old.external_id) == b.id:
                del keys[old.external_id]
            size += old is None
            changes[b.id] = b
            keys[b.external_id] = b.id
        return Briefs(
            self.ids, self.clusters, self.offsets, self.blob, self.keys, self.key_rows,
            changes, keys, self.vocabulary.with_terms(terms), size, self.decoded,
        )  # fmt: skip

    def compacted(self) -> Briefs:
        """The same briefs, every one in the main part."""
        if not self.changes:
            return (
                self
                if not self.vocabulary.added
                else replace(self, vocabulary=self.vocabulary.compacted())
            )
        changed = np.fromiter(self.changes, np.int64, len(self.changes))
        rows = np.flatnonzero(~np.isin(self.ids, changed))
        added = sorted((b for b in self.changes.values() if b is not None), key=lambda b: b.id)
        records = [encode(b) for b in added]
        row_keys = np.zeros(len(self.ids), np.uint64)
        row_keys[self.key_rows] = self.keys
        ids = np.concatenate((self.ids[rows], np.fromiter((b.id for b in added), np.int64)))
        order = np.argsort(ids, kind="stable")
        blob = np.concatenate(
            (_gather(self.blob, self.offsets, rows), np.frombuffer(b"".join(records), np.uint8))
        )
        lengths = np.concatenate(
            (np.diff(self.offsets)[rows], np.fromiter(map(len, records), np.int64, len(records)))
        )
        offsets = _offsets(lengths)
        if np.any(np.diff(order) != 1):  # added ids among the kept ones: records by id
            blob, offsets = _gather(blob, offsets, order), _offsets(lengths[order])
        clusters = np.fromiter((b.canonical for b in added), np.int64, len(added))
        keys = np.fromiter((key_hash(b.external_id) for b in added), np.uint64, len(added))
        return _assembled(
            ids[order],
            np.concatenate((self.clusters[rows], clusters))[order],
            offsets,
            blob,
            np.concatenate((row_keys[rows], keys))[order],
            self.vocabulary.compacted(),
        )

    def arrays(self) -> Arrays:
        whole = self.compacted()
        return {
            "ids": whole.ids,
            "clusters": whole.clusters,
            "offsets": whole.offsets,
            "blob": whole.blob,
            "keys": whole.keys,
            "key_rows": whole.key_rows,
            **whole.vocabulary.arrays("vocabulary."),
        }

    def nbytes(self) -> int:
        base = sum(int(a.nbytes) for a in (self.ids, self.clusters, self.offsets, self.blob))
        held = int(self.keys.nbytes + self.key_rows.nbytes) + self.vocabulary.nbytes()
        return base + held + 512 * len(self.changes)


def build_briefs(briefs: Sequence[Brief], terms: Iterable[tuple[int, str]] = ()) -> Briefs:
    """The briefs of ``briefs`` (ids unique, any order), all in the main part, with the
    ``terms`` (hash, name) of their vectors."""
    ordered = sorted(briefs, key=lambda b: b.id)
    records = [encode(b) for b in ordered]
    offsets = _offsets(np.fromiter((len(r) for r in records), np.int64, len(records)))
    return _assembled(
        np.fromiter((b.id for b in ordered), np.int64, len(ordered)),
        np.fromiter((b.canonical for b in ordered), np.int64, len(ordered)),
        offsets,
        np.frombuffer(b"".join(records), np.uint8).copy(),
        np.fromiter((key_hash(b.external_id) for b in ordered), np.uint64, len(ordered)),
        build_vocabulary(terms),
    )


def briefs_from_arrays(arrays: Arrays) -> Briefs:
    """The briefs back from :meth:`Briefs.arrays` (possibly memory-mapped).

    Raises:
        ValueError: missing arrays, or arrays that do not fit together.
    """
    try:
        ids, clusters, offsets = arrays["ids"], arrays["clusters"], arrays["offsets"]
        blob, keys, key_rows = arrays["blob"], arrays["keys"], arrays["key_rows"]
    except KeyError as exc:
        raise ValueError(f"no {exc} array") from None
    n = len(ids)
    fits = (
        ids.dtype == np.int64
        and bool(np.all(np.diff(ids) > 0))
        and clusters.shape == (n,)
        and offsets.shape == (n + 1,)
        and keys.shape == (n,)
        and key_rows.shape == (n,)
        and blob.dtype == np.uint8
        and (n == 0 or (int(offsets[0]) == 0 and int(offsets[-1]) == len(blob)))
        and bool(np.all(np.diff(offsets) >= 0))
        and bool(np.all((key_rows >= 0) & (key_rows < max(n, 1))))
    )
    if not fits:
        raise ValueError("brief arrays do not fit together")
    vocabulary = vocabulary_from_arrays(arrays, "vocabulary.")
    return Briefs(ids, clusters, offsets, blob, keys, key_rows, {}, {}, vocabulary)


def _assembled(
    ids: I64, clusters: I64, offsets: I64, blob: Any, row_keys: U64, vocabulary: Vocabulary
) -> Briefs:
    """Briefs of columns by row, with the keys (``row_keys``: each row's) sorted."""
    order = np.argsort(row_keys, kind="stable")
    keys, rows = row_keys[order], order.astype(np.int64)
    return Briefs(ids, clusters, offsets, blob, keys, rows, {}, {}, vocabulary)


def _offsets(lengths: I64) -> I64:
    out = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=out[1:])
    return out


def _gather(blob: Any, offsets: I64, rows: npt.NDArray[Any]) -> npt.NDArray[np.uint8]:
    """The records of ``rows`` (in that order), concatenated; by chunks of rows, so that the
    byte positions of one chunk are held at a time."""
    out = []
    for start in range(0, len(rows), CHUNK):
        chunk = rows[start : start + CHUNK]
        starts, lengths = offsets[chunk], offsets[chunk + 1] - offsets[chunk]
        total = int(lengths.sum())
        shift = np.repeat(starts - _offsets(lengths)[:-1], lengths)
        out.append(np.asarray(blob[np.arange(total, dtype=np.int64) + shift], np.uint8))
    return np.concatenate(out) if out else np.zeros(0, np.uint8)
