"""``recengine export related --out DIR``: the related lists as files for static-site generators.

One file per live article (``recommend.export``): JSON data files (the HTTP body, for Hugo,
Hexo or Jekyll templates) or HTML fragments (``related.html``'s markup, to include as is). Only
the lists that can have changed since the last export into the folder are recomputed, and only
files whose bytes change are rewritten.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import click

from recengine.cli.params import BIGINT_MAX, Integer

if TYPE_CHECKING:
    from recengine.cli.context import CliContext

_LANG = re.compile(r"[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*")
_PARTS = ("image", "title", "date", "category", "summary")


@click.group()
def export() -> None:
    """Write related lists as files for static-site generators (Hugo, Hexo, Jekyll)."""


@export.command("related")
@click.option(
    "--out",
    "out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="The folder of the files (created if missing), e.g. data/related.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["json", "html"]),
    default="json",
    show_default=True,
    help="json: data files (the HTTP body); html: fragments to include as they are.",
)
@click.option(
    "--since",
    type=Integer(0, BIGINT_MAX),
    default=None,
    help="Recompute the lists changed after this change sequence (default: the last export's).",
)
@click.option("--full", is_flag=True, help="Recompute every list.")
@click.option("-k", "k", type=Integer(1, 1_000), default=6, show_default=True, help="Items.")
@click.option(
    "--layout",
    type=click.Choice(["list", "cards", "grid"]),
    default="cards",
    show_default=True,
    help="html: the layout's markup (data-recengine-layout).",
)
@click.option("--show", default=None, help="html: the parts, e.g. image,title,date.")
@click.option("--lang", default="zh-CN", show_default=True, help="html: heading and dates.")
@click.option(
    "--link",
    default=None,
    help='The link of articles stored without a usable url, e.g. "/post/{id}".',
)
@click.pass_obj
def related_command(
    ctx: CliContext,
    out: Path,
    fmt: str,
    since: int | None,
    full: bool,
    k: int,
    layout: str,
    show: str | None,
    lang: str,
    link: str | None,
) -> None:
    """The related list of every live article, one file each in --out (only the lists that
    can have changed since the last export into it are recomputed)."""
    from recengine.recommend.export import export_related
    from recengine.recommend.lists.fragment import Shape
    from recengine.recommend.live import LiveIndex
    from recengine.recommend.related import RelatedArticles

    if k > ctx.settings.related.max_k:
        raise click.BadParameter(
            f"at most related.max_k ({ctx.settings.related.max_k})", param_hint="'-k'"
        )
    if not _LANG.fullmatch(lang):
        raise click.BadParameter(
            f"{lang!r} is not a language tag (zh-CN, en)", param_hint="'--lang'"
        )
    parts = tuple(p for p in re.split(r"[\s,]+", show.strip()) if p) if show else None
    unknown = [p for p in parts or () if p not in _PARTS]
    if unknown:
        raise click.BadParameter(
            f"unknown part {unknown[0]!r}: give some of {', '.join(_PARTS)}", param_hint="'--show'"
        )
    shape = Shape(
        layout=layout,  # type: ignore[arg-type]  # click.Choice checked it
        show=parts,
        lang=lang,
        link=link,
        zone=ctx.settings.ingest.zone,
    )
    index = LiveIndex(ctx.settings, ctx.factory, background=False)
    done = export_related(
        factory=ctx.factory,
        related=RelatedArticles(ctx.settings, index),
        out=out,
        fmt=fmt,  # type: ignore[arg-type]
        k=k,
        shape=shape,
        since=since,
        full=full,
    )
    how = "every list" if done.full else f"the lists changed after sequence {done.since}"
    click.echo(
        f"exported {how} to {out}: {done.written} written, {done.unchanged} unchanged, "
        f"{done.removed} removed (complete up to sequence {done.seq})"
    )
