"""A main segment plus small delta segments: how an immutable index takes changes cheaply.

For index kinds whose structure is expensive to build but cheap to search in several pieces
(the related-articles segments, ``index.related.segment``). An
:class:`~recengine.index.related.view.IndexView` is a tuple of parts, each a segment and its
``alive`` mask; part 0 is the *main* segment. Applying changes (:func:`with_changes`) never touches
a segment: the rows the changes replace or delete are marked dead (a new mask), and the new rows
become one more small segment. So a query never sees half a change, and a change costs time in
proportion to its own size.

Upkeep, so that searches stay fast:

* more than ``max_parts`` parts: the small ones are merged into one (cheap: they are small);
* more than ``delta_max_rows`` live rows outside the main segment, or more than a fifth of the
  main segment dead (at least 1,000 rows): :func:`compaction_due`, and :func:`compacted` merges
  every live row into a new main segment (the follower does it in a background thread in
  servers, then saves it).

On disk (:func:`view_arrays`, :func:`view_from_arrays`) each part's arrays are stored under
``p<i>.<name>`` with its mask as ``p<i>.alive``; a loaded view is memory-mapped and checked
(:func:`check_segment`).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from recengine.index.container import Arrays
from recengine.index.kind import I64
from recengine.index.related.segment import Segment, build_segment, concat_rows
from recengine.index.related.view import IndexView, Part

DEAD_SHARE = 5  # compact when more than 1/DEAD_SHARE of the main segment is dead
MIN_DEAD = 1_000


def whole(segment: Segment) -> Part:
    """A part whose every row is live."""
    return Part(segment, np.ones(len(segment), dtype=bool))


def with_changes(view: IndexView, changed: I64, added: Segment | None, max_parts: int) -> IndexView:
    """``view`` with the rows of ``changed`` ids dead and ``added`` as a new part.

    Args:
        changed: every id deleted or replaced (``int64``).
        added: the new rows (ids among ``changed``), or None.
        max_parts: merge the small parts into one when there would be more.
    """
    parts = []
    for part in view.parts:
        rows = part.segment.find(changed)
        rows = rows[rows >= 0]
        if len(rows) and part.alive[rows].any():
            alive = part.alive.copy()
            alive[rows] = False
            part = Part(part.segment, alive)
        parts.append(part)
    if added is not None and len(added):
        parts.append(whole(added))
    main, small = parts[:1], [p for p in parts[1:] if p.live]
    if len(small) > max_parts:
        index_terms = small[0].segment.index_terms
        merged = concat_rows([p.segment.rows(p.alive) for p in small])
        small = [whole(build_segment(merged, index_terms))]
    return IndexView(tuple(main + small))


def compaction_due(view: IndexView, delta_max_rows: int) -> bool:
    """Whether the live rows should be merged into a new main segment now."""
    main, small = view.parts[0], view.parts[1:]
    outside = sum(p.live for p in small)
    dead = len(main.alive) - main.live
    return outside > delta_max_rows or dead > max(MIN_DEAD, len(main.alive) // DEAD_SHARE)


def compacted(view: IndexView) -> IndexView:
    """Every live row of ``view`` in one main segment."""
    index_terms = view.parts[0].segment.index_terms
    rows = concat_rows([p.segment.rows(p.alive) for p in view.parts])
    return IndexView((whole(build_segment(rows, index_terms)),))


def view_arrays(view: IndexView) -> Arrays:
    """The arrays of every part (``p<i>.<name>``) and its mask (``p<i>.alive``)."""
    out: Arrays = {}
    for i, part in enumerate(view.parts):
        for name, array in part.segment.arrays().items():
            out[f"p{i}.{name}"] = array
        out[f"p{i}.alive"] = part.alive
    return out


def view_from_arrays(arrays: Arrays, index_terms: int) -> IndexView:
    """The view back from :func:`view_arrays`.

    Raises:
        ValueError: parts missing pieces or with arrays that do not fit together.
    """
    grouped: dict[int, dict[str, Any]] = defaultdict(dict)
    for key, array in arrays.items():
        prefix, _, name = key.partition(".")
        if not prefix.startswith("p") or not prefix[1:].isdigit() or not name:
            raise ValueError(f"unexpected array {key!r}")
        grouped[int(prefix[1:])][name] = array
    if sorted(grouped) != list(range(len(grouped))) or not grouped:
        raise ValueError(f"parts {sorted(grouped)} are not 0..n-1")
    parts = []
    for i in range(len(grouped)):
        fields = dict(grouped[i])
        alive = fields.pop("alive", None)
        try:
            segment = Segment(index_terms=index_terms, **fields)
        except TypeError as exc:
            raise ValueError(f"part {i}: {exc}") from None
        check_segment(segment, f"part {i}")
        if alive is None or alive.dtype != np.bool_ or alive.shape != (len(segment),):
            raise ValueError(f"part {i}: no alive mask of {len(segment)} booleans")
        parts.append(Part(segment, alive))
    return IndexView(tuple(parts))


def check_segment(seg: Segment, where: object = "segment") -> None:
    """Raise ``ValueError`` unless the arrays fit together (cheap, O(n + V))."""
    n, v = len(seg.ids), len(seg.terms)
    problems = []
    for name in ("fingerprints", "published", "category"):
        if len(getattr(seg, name)) != n:
            problems.append(f"{name} length")
    for name, size, values in (
        ("tag_indptr", n, len(seg.tag_hashes)),
        ("vec_indptr", n, len(seg.vec_cols)),
        ("post_indptr", v, len(seg.post_rows)),
    ):
        ptr = getattr(seg, name)
        if len(ptr) != size + 1 or ptr[0] != 0 or ptr[-1] != values or np.any(np.diff(ptr) < 0):
            problems.append(f"{name} bounds")
    if len(seg.vec_weights) != len(seg.vec_cols) or len(seg.post_weights) != len(seg.post_rows):
        problems.append("weights length")
    if len(seg.vec_cols) and (seg.vec_cols.min() < 0 or seg.vec_cols.max() >= v):
        problems.append("vec_cols out of range")
    if len(seg.post_rows) and (seg.post_rows.min() < 0 or seg.post_rows.max() >= n):
        problems.append("post_rows out of range")
    if n > 1 and np.any(np.diff(seg.ids) <= 0):
        problems.append("ids not ascending")
    if problems:
        raise ValueError(f"{where}: inconsistent arrays: {', '.join(problems)}")
