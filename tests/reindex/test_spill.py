"""What pass 1 spills of compared texts for the leader pass (``pipeline.reindex.spill``): the same
arrays back, only for the ``seq`` they were spilled at, nothing left on disk once closed."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from recengine.pipeline.reindex.spill import SpilledTexts, spill, spill_path
from recengine.text.neardup.compare import Compared, compared
from recengine.text.neardup.kept import KeptTexts


def _texts() -> list[Compared]:
    return [
        compared("标题一", "正文第一段，讲的是数据库索引。\n第二段讲查询优化器。"),
        compared("", ""),  # nothing to compare: empty arrays
        compared("Title", "An English body, with some words in it." * 20),
    ]


def _same(a: Compared, b: Compared) -> bool:
    return (
        np.array_equal(a.shingles, b.shingles)
        and np.array_equal(a.title, b.title)
        and a.body_chars == b.body_chars
    )


def test_spilled_texts_come_back_as_they_were(tmp_path: Path) -> None:
    texts = _texts()
    first = spill(tmp_path, texts[:2])
    second = spill(tmp_path, texts[2:])  # appended to the same file of this process
    assert first[0] == second[0] == str(spill_path(tmp_path))
    with SpilledTexts(KeptTexts(0), tmp_path) as store:
        store.add(first[0], [(1, 10), (2, 20)], first[1])
        store.add(second[0], [(3, 30)], second[1])
        for article_id, seq, text in ((1, 10, texts[0]), (2, 20, texts[1]), (3, 30, texts[2])):
            found = store.get(article_id, seq)
            assert found is not None and _same(found, text)
            assert found.shingles.flags.writeable  # as computed arrays are (compiled kernels)
        assert store.get(1, 11) is None  # changed since pass 1 read it: computed again
        assert store.get(4, 10) is None
        assert store.get(0, -1) is None  # never spilled, though inside the table (its fill)


def test_memory_first_and_the_files_removed_when_closed(tmp_path: Path) -> None:
    texts = _texts()
    path, where = spill(tmp_path, texts[:1])
    store = SpilledTexts(KeptTexts(1 << 20), tmp_path)
    store.add(path, [(1, 10)], where)
    store.put(1, 11, texts[2])  # the pass compared it at a later seq: kept in memory
    found = store.get(1, 11)
    assert found is not None and _same(found, texts[2])
    store.close()
    assert list(tmp_path.iterdir()) == []
    assert store.get(1, 10) is None


def test_a_file_cut_short_gives_nothing_not_a_wrong_text(tmp_path: Path) -> None:
    texts = _texts()
    path, where = spill(tmp_path, [texts[0], texts[2]])
    with open(path, "r+b") as handle:  # the disk filled up during the second text
        handle.truncate(where[1].offset + 8)
    with SpilledTexts(KeptTexts(0), tmp_path) as store:
        store.add(path, [(1, 1), (2, 1)], where)
        found = store.get(1, 1)
        assert found is not None and _same(found, texts[0])
        assert store.get(2, 1) is None
