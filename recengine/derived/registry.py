"""Every kind of derived index a deployment keeps, by name: what a reindex publishes after its
switch, and what the conformance test runs over (``tests/index/test_index_conformance.py``)."""

from __future__ import annotations

from typing import Any

from recengine.config import Settings
from recengine.derived.briefs import BriefKind, brief_follower
from recengine.derived.dense import DenseKind, dense_follower
from recengine.derived.neardup import (
    CanonicalKind,
    NearDupKind,
    canonical_follower,
    neardup_follower,
)
from recengine.derived.passages import PassageKind, passage_follower
from recengine.derived.related import RelatedKind, related_follower
from recengine.index.follower import Follower

KINDS = (
    NearDupKind.name,
    PassageKind.name,
    CanonicalKind.name,
    RelatedKind.name,
    DenseKind.name,
    BriefKind.name,
)


def followers(settings: Settings, *, background: bool = False) -> dict[str, Follower[Any]]:
    """A new follower of each kind, by kind name (see :data:`KINDS`)."""
    return {
        NearDupKind.name: neardup_follower(settings),
        PassageKind.name: passage_follower(settings),
        CanonicalKind.name: canonical_follower(settings),
        RelatedKind.name: related_follower(settings, background=background),
        DenseKind.name: dense_follower(settings, background=background),
        BriefKind.name: brief_follower(settings, background=background),
    }
