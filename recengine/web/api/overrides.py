"""``/api/v1/overrides``: editors' decisions that every list, feed, cluster and reindex honours.

Every operation needs the API key (the reasons are editors' notes, and the decisions change
what readers see). See ``recommend.overrides`` for what each kind does and how contradicting
decisions replace each other.
"""

from __future__ import annotations

from functools import partial

from recengine.errors import Conflict, NotFound
from recengine.recommend.overrides import NewOverride
from recengine.web.api.routing import Router, validated_body, validated_query
from recengine.web.schemas.editorial import (
    OverrideAdded,
    OverrideIn,
    OverrideRemoved,
    OverridesOut,
    OverridesQuery,
)
from recengine.web.services import services, session


def add_override() -> OverrideAdded:
    """Store an editorial override (who, when, why): in force for every reader from the commit.

    Overrides of near-duplicate clusters (``not_duplicate``, ``same_article``, ``canonical``)
    recompute the clusters they touch in the same transaction. Storing the same override
    again changes nothing (a pin given a new position moves there). A decision replaces the
    one it contradicts (block / pin of a pair, same_article / not_duplicate of a pair); one
    that cannot be decided by replacing is refused with 409.
    """
    kind, article, other, position, reason, by = validated_body(OverrideIn).parts()
    new = NewOverride.parse(kind, article, other, position=position, reason=reason, by=by)
    return OverrideAdded.model_validate(services().overrides.add(new))


def list_overrides() -> OverridesOut:
    """Stored overrides by id (of some kinds, or naming one article), with whether each is in
    force: one naming a deleted article is kept, and listed with ``active: false``."""
    query = validated_query(OverridesQuery)
    found = services().overrides.listing(
        session=session(),
        kinds=query.kind or None,
        article=query.article,
        after_id=query.after,
        limit=query.limit,
    )
    full = len(found) == query.limit
    return OverridesOut.model_validate(
        {"overrides": found, "next_after": found[-1]["id"] if found and full else None}
    )


def remove_override(override_id: int) -> OverrideRemoved:
    """Delete an override: lists, feeds and clusters are as without it from the commit on."""
    removed = services().overrides.remove(override_id)
    return OverrideRemoved.model_validate({"override": removed})


def init_app(router: Router) -> None:
    add_op = partial(router.add, tag="overrides", write=True)
    add_op(
        "/api/v1/overrides",
        add_override,
        method="POST",
        ok=OverrideAdded,
        json=OverrideIn,
        errors=(NotFound, Conflict),
    )
    add_op(
        "/api/v1/overrides",
        list_overrides,
        method="GET",
        ok=OverridesOut,
        query=OverridesQuery,
        errors=(NotFound,),
    )
    add_op(
        "/api/v1/overrides/<int:override_id>",
        remove_override,
        method="DELETE",
        ok=OverrideRemoved,
        errors=(NotFound,),
    )
