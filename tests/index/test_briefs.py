"""The briefs held beside the index (``index.briefs``): changes, compaction, files and caller
ids whose hashes collide, against a plain dict of the same briefs."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recengine.index import briefs as module
from recengine.index.briefs import Brief, Briefs, briefs_from_arrays, build_briefs


def brief(i: int, version: int = 0, canonical: int | None = None) -> Brief:
    return Brief(
        i,
        f"标识-{i}",
        f"标题 {i} v{version}",
        None if i % 3 else f"https://example.com/{i}",
        None,
        f"摘要 {version}",
        "1:120",
        "2024-01-01T00:00:00Z" if i % 2 else None,
        1704067200 if i % 2 else -1,
        "分类" if i % 4 else None,
        ("标签", f"t{i}"),
        "resemblance" if canonical is not None else None,
        0.5 if canonical is not None else None,
        3 if canonical is not None else 0,
        10 * i + version,
        i if canonical is None else canonical,
    )


def answers(held: Briefs, expected: dict[int, Brief], probe: list[int]) -> None:
    """``held`` answers every question as ``expected`` (the briefs by id) does."""
    assert len(held) == len(expected)
    for i in probe:
        assert held.get(i) == expected.get(i)
        want = expected.get(i)
        assert held.find(f"标识-{i}") == (i if want is not None else None)
    clusters = held.canonicals(np.array(probe, np.int64))
    assert clusters.tolist() == [expected[i].canonical if i in expected else -1 for i in probe]


@settings(max_examples=60, deadline=None)
@given(
    first=st.sets(st.integers(1, 60), max_size=30),
    steps=st.lists(
        st.tuples(st.sets(st.integers(1, 80), max_size=6), st.sets(st.integers(1, 80), max_size=6)),
        max_size=6,
    ),
)
def test_changes_compaction_and_files_answer_like_a_dict(
    first: set[int], steps: list[tuple[set[int], set[int]]]
) -> None:
    expected = {i: brief(i) for i in first}
    held = build_briefs(list(expected.values()))
    probe = list(range(0, 82))
    for n, (drops, upserts) in enumerate(steps):
        upserts -= drops
        new = [brief(i, n + 1, canonical=min(upserts) if i % 2 else None) for i in sorted(upserts)]
        held = held.with_changes(np.array(sorted(drops), np.int64), new)
        for i in drops:
            expected.pop(i, None)
        expected.update({b.id: b for b in new})
        answers(held, expected, probe)
    answers(held.compacted(), expected, probe)
    answers(briefs_from_arrays(held.arrays()), expected, probe)
    assert held.compacted().arrays().keys() == build_briefs(list(expected.values())).arrays().keys()
    for name, array in held.arrays().items():
        assert np.array_equal(array, build_briefs(list(expected.values())).arrays()[name]), name


def test_caller_ids_whose_hashes_collide_are_told_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(module, "key_hash", lambda external_id: 7)  # every key the same
    expected = {i: brief(i) for i in range(1, 40)}
    held = build_briefs(random.Random(1).sample(list(expected.values()), 39))
    answers(held, expected, list(range(45)))
    held = held.with_changes(np.array([3, 4], np.int64), [brief(50)]).compacted()
    del expected[3], expected[4]
    expected[50] = brief(50)
    answers(held, expected, list(range(55)))


def test_arrays_that_do_not_fit_together_are_refused() -> None:
    arrays = build_briefs([brief(1), brief(2)]).arrays()
    with pytest.raises(ValueError):
        briefs_from_arrays({**arrays, "offsets": arrays["offsets"][:-1]})
    with pytest.raises(ValueError):
        briefs_from_arrays({k: v for k, v in arrays.items() if k != "blob"})


def test_the_vocabulary_names_every_hash_it_was_given_and_no_other() -> None:
    first = [(h * 7919 + 3, f"词{h}") for h in range(50)]
    later = [(h * 7919 + 3, f"词{h}") for h in range(40, 90)]  # some known already
    held = build_briefs([brief(1)], first)
    held = held.with_changes(np.zeros(0, np.int64), [brief(2)], later)
    for vocabulary in (
        held.vocabulary,
        held.compacted().vocabulary,
        briefs_from_arrays(held.arrays()).vocabulary,
    ):
        hashes = np.array([h * 7919 + 3 for h in (89, 0, 45, 12)], np.uint64)
        assert vocabulary.names(hashes) == ["词89", "词0", "词45", "词12"]
        assert vocabulary.names(np.array([5], np.uint64)) is None  # never given
        assert vocabulary.names(np.zeros(0, np.uint64)) == []
        assert len(vocabulary) == 90


def test_decoded_briefs_are_held_by_row_bounded_and_shared_only_by_one_main_part(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What was decoded is held (``Briefs.decoded``) and shared with the briefs a change
    makes, which answer their changes first: each snapshot keeps answering as it did, and
    no more than ``DECODED_HELD`` are held."""
    monkeypatch.setattr(module, "DECODED_HELD", 3)
    before = build_briefs([brief(i) for i in range(1, 9)])
    assert [before.get(i) for i in range(1, 9)] == [brief(i) for i in range(1, 9)]
    assert 0 < len(before.decoded) <= 3
    after = before.with_changes(np.array([2], np.int64), [brief(5, 1)])
    assert after.decoded is before.decoded  # the same main part
    assert (after.get(2), after.get(5), after.get(6)) == (None, brief(5, 1), brief(6))
    assert (before.get(2), before.get(5), before.get(6)) == (brief(2), brief(5), brief(6))
    assert after.compacted().decoded is not before.decoded  # a new main part
    assert after.compacted().get(5) == brief(5, 1)
