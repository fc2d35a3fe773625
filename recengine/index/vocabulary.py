"""Term names by term hash: what turns the hashes an index holds back into the words an
explanation shows (``shared_terms`` of a list about an article held in memory).

One table for every article, where each article's own terms would cost about as much as its
vector: 2.5 MB for the 105,240 distinct terms of 9,882 real articles; it grows with the distinct
terms, not the articles (~200 MB for the 9.4M of the 1M synthetic corpus of resampled tokens,
whose vocabulary is far wider than a real site's). Term hashes name terms uniquely
everywhere in recengine (``features.hashing``), so a hash met again names the same term; terms
are added as articles are, never removed (a term of a deleted article names nothing wrongly).

Array contracts: ``hashes`` ``uint64 (v,)`` ascending and unique; ``offsets`` ``int64 (v + 1,)``
into ``blob`` ``uint8 (m,)``, each term's UTF-8 bytes; ``added``: terms met since the arrays
were written (hash -> term), folded in by :meth:`Vocabulary.compacted`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from recengine.index.container import Arrays

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]


@dataclass(frozen=True, eq=False)
class Vocabulary:
    """Term names by hash (see the module docstring). Immutable."""

    hashes: U64
    offsets: I64
    blob: npt.NDArray[np.uint8]
    added: Mapping[int, str]

    def __len__(self) -> int:
        return len(self.hashes) + len(self.added)

    def names(self, hashes: U64) -> list[str] | None:
        """The term of each hash, in order; None when one is not known."""
        if not len(hashes):
            return []
        own = self.hashes
        at = np.minimum(np.searchsorted(own, hashes), max(len(own) - 1, 0))
        found = own[at] == hashes if len(own) else np.zeros(len(hashes), bool)
        out = []
        for h, row, ok in zip(hashes.tolist(), at.tolist(), found.tolist(), strict=True):
            if ok:
                out.append(bytes(self.blob[self.offsets[row] : self.offsets[row + 1]]).decode())
            elif h in self.added:
                out.append(self.added[h])
            else:
                return None
        return out

    def knows(self, hashes: U64) -> bool:
        """Whether every one of ``hashes`` names a term here (:meth:`names` would name them
        all), without decoding any."""
        held = _holds(self.hashes, np.asarray(hashes, np.uint64))
        return all(h in self.added for h in np.asarray(hashes)[~held].tolist())

    def with_terms(self, pairs: Iterable[tuple[int, str]]) -> Vocabulary:
        """This vocabulary with the terms of ``pairs`` (hash, term) it does not hold yet."""
        new = {h: t for h, t in pairs if h not in self.added}
        if not new:
            return self
        keys = np.fromiter(new, np.uint64, len(new))
        known = _holds(self.hashes, keys)
        fresh = {h: new[h] for h, k in zip(keys.tolist(), known.tolist(), strict=True) if not k}
        if not fresh:
            return self
        return Vocabulary(self.hashes, self.offsets, self.blob, {**self.added, **fresh})

    def compacted(self) -> Vocabulary:
        """The same terms, all in the arrays."""
        if not self.added:
            return self
        offsets = self.offsets.tolist()
        held = bytes(self.blob)
        names = [held[offsets[i] : offsets[i + 1]] for i in range(len(self.hashes))]
        names += [t.encode() for t in self.added.values()]
        keys = np.concatenate((self.hashes, np.fromiter(self.added, np.uint64, len(self.added))))
        return _assembled(keys, names)

    def arrays(self, prefix: str) -> Arrays:
        whole = self.compacted()
        return {
            f"{prefix}hashes": whole.hashes,
            f"{prefix}offsets": whole.offsets,
            f"{prefix}blob": whole.blob,
        }

    def nbytes(self) -> int:
        return int(self.hashes.nbytes + self.offsets.nbytes + self.blob.nbytes) + 64 * len(
            self.added
        )


def build_vocabulary(pairs: Iterable[tuple[int, str]]) -> Vocabulary:
    """The vocabulary of ``pairs`` (hash, term; a hash may come several times)."""
    terms = dict(pairs)
    keys = np.fromiter(terms, np.uint64, len(terms))
    return _assembled(keys, [t.encode() for t in terms.values()])


def vocabulary_from_arrays(arrays: Arrays, prefix: str) -> Vocabulary:
    """:meth:`Vocabulary.arrays` back (possibly memory-mapped).

    Raises:
        ValueError: missing arrays, or arrays that do not fit together.
    """
    try:
        hashes, offsets = arrays[f"{prefix}hashes"], arrays[f"{prefix}offsets"]
        blob = arrays[f"{prefix}blob"]
    except KeyError as exc:
        raise ValueError(f"no {exc} array") from None
    fits = (
        hashes.dtype == np.uint64
        and bool(np.all(np.diff(hashes) > 0))
        and offsets.shape == (len(hashes) + 1,)
        and blob.dtype == np.uint8
        and int(offsets[0]) == 0
        and int(offsets[-1]) == len(blob)
        and bool(np.all(np.diff(offsets) >= 0))
    )
    if not fits:
        raise ValueError("vocabulary arrays do not fit together")
    return Vocabulary(hashes, offsets, blob, {})


def _holds(hashes: U64, keys: U64) -> npt.NDArray[np.bool_]:
    if not len(hashes):
        return np.zeros(len(keys), bool)
    at = np.minimum(np.searchsorted(hashes, keys), len(hashes) - 1)
    held: npt.NDArray[np.bool_] = hashes[at] == keys
    return held


def _assembled(keys: U64, names: list[bytes]) -> Vocabulary:
    order = np.argsort(keys, kind="stable")
    ordered = [names[i] for i in order.tolist()]
    offsets = np.zeros(len(ordered) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, ordered), np.int64, len(ordered)), out=offsets[1:])
    blob = np.frombuffer(b"".join(ordered), np.uint8).copy()
    return Vocabulary(keys[order], offsets, blob, {})
