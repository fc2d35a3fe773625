"""What a derived index supplies to follow SQL, and what it reads SQL through.

Every index recengine keeps in memory (near-duplicate radius, related-articles candidates, and
the ones later issues add) is derived from the rows of ``articles`` and ``article_features``
under one IDF model version, and follows ``articles.seq``. The state machine that keeps one in
step with SQL is the same for all of them (``index.follower.Follower``); an index *kind* only
says how to turn rows into its index:

* :attr:`IndexKind.name` (its folder and the ``kind`` of its files), :attr:`IndexKind.fields`
  (the row columns it needs beyond ``id`` and ``seq``), :attr:`IndexKind.needs_terms` (leave out
  articles whose text has no terms), :attr:`IndexKind.canonicals_only` (leave out the members of
  near-duplicate clusters under the version: writers keep an article's ``seq`` moving when its
  member row comes, goes or changes, ``pipeline.clusters.upkeep``), :attr:`IndexKind.reads_clusters`
  (it reads member rows, so a reindex builds it only after its switch);
* :meth:`IndexKind.params`: the parameters a saved file must have been built with;
* :meth:`IndexKind.build` from pages of rows, :meth:`IndexKind.apply` drops and upserts;
* optionally :meth:`IndexKind.for_version`: the kind bound to what was fitted with the model
  version it builds (the dense kind's LSA model, read through :meth:`RowReader.model_part`);
  an index that needs such a model carries it, so ``apply`` and ``restore`` need nothing more;
* :meth:`IndexKind.arrays` / :meth:`IndexKind.restore`: its state as named arrays (the file
  container, ``index.container``), and back;
* optionally :meth:`IndexKind.compaction_due` / :meth:`IndexKind.compact` (kinds made of a main
  segment plus deltas, ``index.layered``).

Rows come from a :class:`RowReader` (``storage.rows.index_rows`` implements it over SQLAlchemy);
``index`` itself knows no SQL. A row has attributes ``id``, ``seq`` and each name in
``fields``; change rows also have ``present`` (false: the article was deleted, has no features
under the version, or no terms when the kind needs them: remove it).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from recengine.index.container import Arrays

T = TypeVar("T")
I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Position:
    """Where the database is: change sequence, active model version (None: no model yet) and
    its identity (``engine_state.database_id``)."""

    seq: int
    version: int | None
    database: str


class RowReader(Protocol):
    """Reads inside one transaction (the caller's, or one of its own from :meth:`separately`)."""

    def position(self) -> tuple[int, int | None, str]:
        """``(seq, active model version or None, database identity)``: a :class:`Position`."""
        ...

    def live(
        self,
        *,
        version: int,
        fields: Sequence[str],
        needs_terms: bool,
        after_id: int,
        limit: int,
        canonicals_only: bool = False,
    ) -> Sequence[Any]:
        """Up to ``limit`` live articles with features of ``version`` and ``id > after_id``,
        by id."""
        ...

    def changes(
        self,
        *,
        version: int,
        fields: Sequence[str],
        needs_terms: bool,
        after: tuple[int, int],
        upto: int,
        limit: int,
        canonicals_only: bool = False,
    ) -> Sequence[Any]:
        """Up to ``limit`` articles changed after ``after = (seq, id)`` with ``seq <= upto``,
        ordered by ``(seq, id)``; deleted ones included (``present`` false)."""
        ...

    def count(self, *, version: int, needs_terms: bool, canonicals_only: bool = False) -> int:
        """How many articles :meth:`live` yields in all."""
        ...

    def model_part(self, *, version: int, name: str) -> bytes | None:
        """What the reindex fitted for ``version`` under ``name`` (written before the version
        became active, never changed after), or None."""
        ...

    def separately(self) -> AbstractContextManager[RowReader]:
        """The same database in a short read transaction of its own (builds and loads run
        there, outside the caller's transaction, e.g. outside a write lock)."""
        ...


class IndexKind(ABC, Generic[T]):
    """One kind of derived index: rows in, index out (see the module docstring).

    ``apply`` may change ``index`` in place and return it (a mutable index), or return a new
    object and leave the old one untouched (an immutable snapshot); the follower works with
    both, because it only ever uses what ``apply`` returned.
    """

    name: ClassVar[str]
    fields: ClassVar[tuple[str, ...]]
    needs_terms: ClassVar[bool] = False
    canonicals_only: ClassVar[bool] = False  # members of a cluster are left out (not present)
    # Its rows depend on cluster rows (canonicals_only, or member columns), which a reindex
    # writes for its new version without a ``seq``: it is built after the switch.
    reads_clusters: ClassVar[bool] = False

    @abstractmethod
    def params(self) -> dict[str, Any]:
        """What a saved file must have been built with to be used (JSON values)."""

    def for_version(self, reader: RowReader, version: int) -> IndexKind[T]:
        """The kind that builds ``version``'s index (itself, unless building needs what was
        fitted with the version: read it through ``reader``)."""
        return self

    @abstractmethod
    def build(self, pages: Iterable[Sequence[Any]]) -> T:
        """The index of every row in ``pages`` (live rows, each id once)."""

    @abstractmethod
    def apply(self, index: T, drops: I64, upserts: Sequence[Any]) -> T:
        """``index`` without the ``drops`` ids, with ``upserts`` added or replacing their ids
        (ids are unique across both, upserts ordered by id)."""

    @abstractmethod
    def arrays(self, index: T) -> Arrays:
        """The whole state as named arrays (saved in the file container)."""

    def comparable(self, index: T) -> Arrays:
        """What every process following the same changes holds alike, whatever its history
        (what the conformance tests compare): :meth:`arrays`, unless the kind keeps more than
        its answers need (the briefs' names of terms no live article has any more)."""
        return self.arrays(self.compact(index))

    @abstractmethod
    def restore(self, arrays: Arrays) -> T:
        """The index back from :meth:`arrays` (possibly memory-mapped).

        Raises:
            ValueError: the arrays do not fit together.
        """

    @abstractmethod
    def size(self, index: T) -> int:
        """How many articles the index holds (checked against SQL after a load)."""

    def describe(self, index: T) -> dict[str, Any]:
        """Kind-specific figures for health reports (e.g. segments)."""
        return {}

    def nbytes(self, index: T) -> int:
        """Memory the index holds (mapped file pages included): its arrays, unless the kind
        keeps more than it saves (e.g. hash tables rebuilt on load)."""
        return sum(int(a.nbytes) for a in self.arrays(index).values())

    def compaction_due(self, index: T) -> bool:
        """Whether :meth:`compact` should run now (in the background where allowed)."""
        return False

    def compact(self, index: T) -> T:
        """An equivalent, cheaper to search index; ``index`` must stay usable meanwhile."""
        return index


@dataclass(frozen=True)
class Held(Generic[T]):
    """An index with what it reflects: model ``version`` of ``database`` up to change ``seq``."""

    index: T
    version: int
    seq: int
    database: str
