"""The constrained rule kept right by a write or an override change: ``relink`` over the
leader pass's state (:class:`~recengine.pipeline.clusters.constraints_updates.RuledView`), then the
rows.

:func:`ruled_relink` seeds ``relink`` with what a change can affect under the rules (the
changed articles, the units they are in, led by their head, the apart partners of those units,
whose refusals read them; the whole cluster of an edited article under a pinned canonical, as
the stored rows no longer tell which article the pass led with once a publication time
moved), and turns the re-decided units into rows the way the full path does
(``pipeline.clusters.constraints_pass``): every re-decided unit and its other articles get the row
under their cluster's target (its earliest pinned article, else its pass canonical); a cluster whose
target changed, or was itself changed, has its other rows re-pointed (linear in that cluster: a pin
added or removed, a pinned article moving). ``tests/clusters/test_constraints_updates.py`` checks it
against ``cluster_rules.constrained_assign`` after random sequences of writes and override changes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from recengine.pipeline.clusters.constraints import ClusterRules
from recengine.pipeline.clusters.constraints_updates import BaseView, RuledView
from recengine.pipeline.clusters.leader_rule import Member
from recengine.pipeline.clusters.leader_updates import relink


def ruled_relink(
    base: BaseView,
    rules: ClusterRules,
    changed: Iterable[int],
    removed: Iterable[int] = (),
    suspects: Iterable[int] = (),
    moved: bool = True,
) -> dict[int, Member | None]:
    """New rows under the overrides after ``changed`` articles were added or edited (or the
    overrides naming them changed) and ``removed`` ones deleted (module docstring).

    Args:
        base: the stored rows.
        rules: the cluster overrides in force now (of live articles with features).
        changed, removed: as :func:`~recengine.pipeline.clusters.leader_updates.relink`'s; an
        override change
            names its articles (and every article an override pairs with them) as changed.
        suspects: articles that may have been pinned when the rows were made.
        moved: whether a changed article's rank may have moved (an edit; not an override).

    Returns:
        article id -> its new row, or None (a canonical or a singleton), for every article
        whose row may have changed.
    """
    gone = set(removed)
    pins = {*rules.leaders, *suspects, *gone}  # a deleted one may have been pinned
    view = RuledView(base, rules, pins)
    seeds = set(changed) - gone
    if moved:
        seeds |= _pinned_clusters(base, seeds, pins)
    units = {view.head_of[x] for x in seeds | gone if x in view.head_of}
    follow = {y for h in units for y in view.mates[h][1:]}
    # a unit's head (its rank) or cluster may have changed: its partners' refusals read it
    seeds |= units
    seeds = (seeds | {p for x in seeds for p in view.partners(view.head_of.get(x, x))}) - follow
    decided = relink(view, seeds, gone | follow, view.partners)
    return _Rows(view, decided, seeds | gone | set(changed)).of(gone, units)


def _pinned_clusters(base: BaseView, seeds: set[int], pins: set[int]) -> set[int]:
    """The whole stored clusters of edited ``seeds`` whose canonical is (or was) pinned: a
    moved publication time may change which article the pass led with, and the stored rows no
    longer tell which one it was."""
    rows = base.stored(sorted(seeds))
    heads = sorted({rows.get(x, x) for x in seeds} & pins)
    return set(base.members(heads)) | set(heads) if heads else set()


class _Rows:
    """The rows of a ``relink`` result under the overrides (``ruled_relink``)."""

    def __init__(
        self, view: RuledView, decided: Mapping[int, Member | None], changed: set[int]
    ) -> None:
        self.view, self.decided, self.changed = view, decided, changed
        nodes = [view.head_of.get(p, p) for p in view.leaders]
        now = self.clusters(nodes)
        self.target: dict[int, int] = {}  # pass canonical -> its earliest pinned article
        for p, node in zip(view.leaders, nodes, strict=True):
            self.target.setdefault(now[node], p)

    def clusters(self, ids: Sequence[int]) -> dict[int, int]:
        """Pass canonical now of each of ``ids`` (units' heads or articles)."""
        stored = self.view.stored([i for i in ids if i not in self.decided])
        out = {}
        for i in ids:
            if i in self.decided:
                m = self.decided[i]
                out[i] = m.canonical_id if m is not None else i
            else:
                out[i] = stored.get(i, i)
        return out

    def of(self, gone: set[int], units: set[int]) -> dict[int, Member | None]:
        out = self.repointed()
        now = self.clusters(sorted(self.decided))
        for x, m in self.decided.items():
            t = self.target.get(now[x], now[x])
            if x in gone or x == t:
                out[x] = None
            elif m is None or m.canonical_id != t:
                out[x] = self.view.row(x, t)
            else:
                out[x] = m
        heads = sorted(h for h in self.view.mates if h in self.decided or h in units)
        for h, c in self.clusters(heads).items():
            t = self.target.get(c, c)
            out.update((y, None if y == t else self.view.row(y, t)) for y in self.view.mates[h][1:])
        for x in gone:
            out[x] = None
        return out

    def repointed(self) -> dict[int, Member | None]:
        """Rows of the clusters (untouched articles) whose target changed, or was changed."""
        before = self.view.stored(sorted(self.decided))
        now = self.clusters(sorted(self.decided))
        touched = sorted({now[x] for x in self.decided} | {before.get(x, x) for x in self.decided})
        still = self.clusters(touched)
        led = [c for c in touched if still[c] == c]
        was_member = self.view.stored(led)
        stored = self.view.base.stored(led)
        out: dict[int, Member | None] = {}
        for c in led:
            if c in was_member:  # a canonical only now: its members were all re-decided
                continue
            old, new = stored.get(c, c), self.target.get(c, c)
            # an edited pass canonical had its members re-decided; an edited pinned one not
            if old == new and (old == c or old not in self.changed):
                continue
            for x in [old, *self.view.base.members([old])]:
                if x not in self.decided:
                    out[x] = None if x == new else self.view.row(x, new)
        return out
