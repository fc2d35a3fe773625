"""What the near-duplicate decision compares of stored texts, kept across calls by
``(article id, seq)``: the writers' clustering (``pipeline.clusters.verify``) and the readers'
lists (``recommend.lists.texts``) compare the same stored texts again and again, and computing
what is compared of one (cleaning, quoted replies, shingles: ~1-3 ms for a long article) costs
far more than reading it. Keyed by the ``seq`` of the article's last change, so a kept value is
never used for a text that changed since.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from recengine.text.neardup.compare import Compared

_ENTRY_BYTES = 400  # a kept entry beside its arrays: key, dataclass, array headers


class KeptTexts:
    """What was compared of stored texts, by ``(article id, seq)``, least recently used out
    first past ``budget`` bytes of shingles (0 keeps nothing); safe to share between threads
    (a server's writes)."""

    def __init__(self, budget: int) -> None:
        if budget < 0:
            raise ValueError(f"budget must be >= 0 bytes, got {budget}")
        self.budget = budget
        self._texts: OrderedDict[tuple[int, int], Compared] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._texts)

    def held(self) -> list[tuple[int, int]]:
        """``(article id, seq)`` of what is kept, least recently used first."""
        with self._lock:
            return list(self._texts)

    def get(self, article_id: int, seq: int) -> Compared | None:
        """The text kept for the article at this ``seq`` (now the most recently used)."""
        key = (article_id, seq)
        with self._lock:
            found = self._texts.get(key)
            if found is not None:
                self._texts.move_to_end(key)
            return found

    def put(self, article_id: int, seq: int, text: Compared) -> None:
        """Keep ``text``; drop the least recently used past the budget."""
        if _size(text) > self.budget:  # never kept: 0 keeps nothing
            return
        key = (article_id, seq)
        with self._lock:
            if key in self._texts:
                return
            self._texts[key] = text
            self._bytes += _size(text)
            while self._bytes > self.budget:
                _, dropped = self._texts.popitem(last=False)
                self._bytes -= _size(dropped)

    def writing(self, seq: int) -> WrittenTexts:
        """This store as a write transaction of ``seq`` sees it (see :class:`WrittenTexts`)."""
        return WrittenTexts(self, seq)


class WrittenTexts:
    """A :class:`KeptTexts` seen from a write transaction of ``seq``: what is compared of texts
    at ``seq`` or later (written in this transaction, not committed) is held back until
    :meth:`commit`. A rolled-back ``seq`` is given to the next write again, which may write
    another text under it: kept before the commit, a value could then stand for a text that
    never was."""

    def __init__(self, kept: KeptTexts, seq: int) -> None:
        self.kept, self.seq = kept, seq
        self.held: list[tuple[int, int, Compared]] = []

    def get(self, article_id: int, seq: int) -> Compared | None:
        return self.kept.get(article_id, seq)

    def put(self, article_id: int, seq: int, text: Compared) -> None:
        if seq >= self.seq:
            self.held.append((article_id, seq, text))
        else:
            self.kept.put(article_id, seq, text)

    def commit(self) -> None:
        """The transaction committed: keep what was held back."""
        for article_id, seq, text in self.held:
            self.kept.put(article_id, seq, text)
        self.held.clear()


def _size(text: Compared) -> int:
    """What keeping ``text`` costs: its arrays, and about what the entry itself takes."""
    return int(text.shingles.nbytes + text.title.nbytes) + _ENTRY_BYTES
