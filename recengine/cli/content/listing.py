"""What ``recengine related`` and ``recengine feed`` share: the list options, and reading them in
the command line's own words.

The use cases validate their parameters under the HTTP names (``published_after``, ``k``, ...);
:func:`checked` runs the same checks first, so a bad value is named by the option that was typed
(``Invalid value for '--after'``), not by a field of the HTTP API.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from recengine.cli.params import Integer, Number

if TYPE_CHECKING:
    from recengine.config import Settings

# The use cases' (and HTTP's) parameter names -> the options that set them.
OPTIONS = {
    "k": "-k",
    "offset": "--offset",
    "exclude": "--exclude",
    "categories": "--category",
    "tags": "--tag",
    "published_after": "--after",
    "published_before": "--before",
    "min_score": "--min-score",
}


def list_options(what: str, section: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """-k and --offset (paging), --exclude, --category, --tag, --after, --before, --min-score
    (the filters) and --format: the options of related lists and feeds, as on HTTP (``k``,
    ``offset``, ``exclude``, ``categories``, ``tags``, ``published_after``, ...).

    Args:
        what: what -k counts, in its help ("Results", "Items").
        section: the settings section of the defaults (``related``, ``feed``).
    """

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        return _with_filters(command, what, section)

    return decorate


def _with_filters(command: Callable[..., Any], what: str, section: str) -> Callable[..., Any]:
    for option in reversed(
        (
            click.option(
                "-k",
                "k",
                type=Integer(),
                default=None,
                help=f"{what} wanted (default {section}.default_k).",
            ),
            click.option(
                "--offset", type=Integer(), default=0, show_default=True, help=f"{what} skipped."
            ),
            click.option(
                "--exclude", multiple=True, help="An article id never to return (repeatable)."
            ),
            click.option(
                "--category", "categories", multiple=True, help="Only this category (repeatable)."
            ),
            click.option(
                "--tag", "tags", multiple=True, help="Only articles with this tag (repeatable)."
            ),
            click.option(
                "--after",
                "published_after",
                help="Published at or after (ISO 8601 or Unix seconds, as in records).",
            ),
            click.option("--before", "published_before", help="Published before (as --after)."),
            click.option(
                "--min-score",
                type=Number(0.0, 1.0),
                default=None,
                help=f"Lowest score shown (0-1; default {section}.min_score, 0 = no floor).",
            ),
            click.option(
                "--format",
                "fmt",
                type=click.Choice(["text", "json"]),
                default="text",
                show_default=True,
                help="json: the body of the HTTP endpoint.",
            ),
        )
    ):
        command = option(command)
    return command


def given(options: dict[str, Any]) -> dict[str, Any]:
    """The filter options the user gave (click passes every option, most as None or ())."""
    return {name: value for name, value in options.items() if value not in (None, ())}


def checked(settings: Settings, section: str, options: dict[str, Any]) -> dict[str, Any]:
    """The list options given, checked as the use case will check them (``section``'s limits).

    Raises:
        click.BadParameter: a bad value, named by its option (exit 2).
    """
    from recengine.errors import InvalidRequest
    from recengine.recommend.lists.params import Filters, check_int

    wanted = given(options)
    limits = getattr(settings, section)
    checks: dict[str, Callable[[Any], Any]] = {
        "k": lambda v: check_int(v, "k", 1, limits.max_k),
        "offset": lambda v: check_int(v, "offset", 0, limits.max_offset),
    }
    limit, zone = settings.related.max_filter_values, settings.ingest.zone
    for name, value in wanted.items():
        check = checks.get(name, lambda v, n=name: Filters.parse(limit, zone, **{n: v}))
        try:
            check(value)
        except InvalidRequest as exc:
            hint = f"'{OPTIONS[name]}'"
            raise click.BadParameter(in_words(str(exc), name), param_hint=hint) from None
    try:
        Filters.parse(limit, zone, **{n: v for n, v in wanted.items() if n not in checks})
    except InvalidRequest as exc:  # what no single option decides (--after before --before)
        raise click.UsageError(in_words(str(exc))) from None
    return wanted


def in_words(message: str, name: str | None = None) -> str:
    """A use case's message in the command line's words: about ``name``, without its name (click
    names the option); about several parameters, each named by its option."""
    if name is not None:
        return message.removeprefix(name).lstrip(": ")
    for field, option in OPTIONS.items():
        if len(field) > 1:  # "k" is too short to replace inside other words
            message = message.replace(field, option)
    return message
