"""What the text outputs of the commands share: articles shown by id and title, ranked lists."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from recengine.jsontext import printable

if TYPE_CHECKING:
    from sqlalchemy.orm import Session


def titled(article_id: str, titles: dict[str, str], width: int = 60) -> str:
    """``id  title`` (the title cut to ``width`` characters), or the id alone without one."""
    title = titles.get(article_id, "").strip()
    shown = printable(" ".join(title.split()), width) if title else ""
    return f"{article_id}  {shown}" if shown else article_id


def why(cut: dict[str, Any]) -> str:
    """A ``suppressed`` entry's reason in words: ``containment 0.93 via X, distance 12``."""
    figure = f" {cut['score']:.4f}" if cut.get("score") is not None else ""
    via = f" via {cut['via']}" if cut.get("via") else ""
    return f"{cut['rule']}{figure}{via}, distance {cut['distance']}"


def _listed(values: list[Any]) -> str:
    return ", ".join(printable(str(v), 40) for v in values)


# ``reasons.fallback``: where an item filling a short list came from (recommend.signals.fallback)
_FALLBACK = {"newest": "among the newest", "most_clicked": "among the most clicked"}

# How each kind of ``recommend.lists.reasons.Reasons`` reads in a text listing: a line, or None when
# the value says nothing worth a line (no shared tags, a zero dense share).
REASON_TEXT: dict[str, Callable[[Any], str | None]] = {
    "pinned": lambda v: "pinned by an editor" if v else None,
    "fresh": lambda v: "new: among the newest articles" if v else None,
    "fallback": lambda v: f"filling a short list: {_FALLBACK.get(v, v)} of its category",
    "freshness": lambda v: f"freshness: score x {v:.4f} for its age",
    "because_you_read": lambda v: f"because you read: {_listed(v)}" if v else None,
    "interest_share": lambda v: f"interest: {v:.0%} of the reading history",
    "shared_terms": lambda v: f"shared: {_listed([t['term'] for t in v])}" if v else None,
    "dense": lambda v: f"semantic part: {v:.4f}" if v else None,
    "same_category": lambda v: "same category" if v else None,
    "shared_tags": lambda v: f"shared tags: {_listed(v)}" if v else None,
    "coread": lambda v: f"readers of this also read it: {v:.4f}" if v else None,
    "engagement": lambda v: f"readers' clicks: {v:+.4f}" if v else None,
    "explore": lambda v: "exploring: shown to learn how readers take it" if v else None,
}


def reason_lines(reasons: dict[str, Any]) -> list[str]:
    """An item's reasons in words, one line per kind that says something (in the order of
    :data:`REASON_TEXT`; a kind this version does not know is shown as ``kind: value``)."""
    lines = [REASON_TEXT[kind](reasons[kind]) for kind in REASON_TEXT if kind in reasons]
    lines += [
        f"{kind}: {printable(str(v), 60)}" for kind, v in reasons.items() if kind not in REASON_TEXT
    ]
    return [line for line in lines if line]


def print_ranked(heading: str, body: dict[str, Any], session: Session) -> None:
    """A related list or a feed for people: ranked items with their shared terms, then what was
    left out as a near-duplicate (with titles, so a person can tell what was suppressed)."""
    click.echo(heading)
    if not body["items"]:
        click.echo("  (none)")
    for n, entry in enumerate(body["items"], 1):
        title = printable(" ".join(entry["title"].split()), 60)
        click.echo(f"{n:3}. {entry['score']:.4f}  {entry['id']}  {title}")
        for line in reason_lines(entry["reasons"]):
            click.echo(f"       {line}")
    floor = body.get("floor")
    if floor and floor["dropped"]:
        click.echo(f"  ({floor['dropped']} more below the relevance floor {floor['min_score']:g})")
    if body["suppressed"]:
        from recengine.storage.rows.articles import titles_of

        ids = [i for s in body["suppressed"] for i in (s["id"], s["duplicate_of"])]
        titles = titles_of(session=session, external_ids=ids)
        click.echo("suppressed near-duplicates:")
        for s in body["suppressed"]:
            click.echo(f"     {titled(s['id'], titles)}")
            click.echo(f"       duplicate of {titled(s['duplicate_of'], titles)} ({why(s)})")
