"""The query of ``GET /api/v1/articles/<id>/related.html``: the related list's own parameters
(``core.RelatedQuery``, with the deployment's limits) and how the fragment shows it, named as
the widget's attributes (``data-recengine-layout`` is ``layout``, ...)."""

from __future__ import annotations

import re
from datetime import tzinfo
from functools import cache
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, field_validator

from recengine.recommend.lists.fragment import PARTS, Shape
from recengine.web.schemas.core import QueryInt, RelatedQuery

_PART_SPLIT = re.compile(r"[\s,]+")
# A language tag as pages write it in lang="..." (BCP 47's shape: zh-CN, en, zh-Hant-TW).
_LANG = r"^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$"


def _text(value: Any) -> Any:
    return value.strip() if isinstance(value, str) else value


class FragmentQuery(RelatedQuery):
    """What the fragment shows (the list's parameters are the JSON list's)."""

    layout: Literal["list", "cards", "grid"] = Field(
        "cards", description="list, cards or grid (data-recengine-layout)."
    )
    show: str | None = Field(
        None,
        max_length=100,
        description="The parts each item shows, of image, title, date, category, summary, "
        "separated by commas or spaces (default: the layout's; data-recengine-show).",
    )
    lang: Annotated[str, BeforeValidator(_text)] = Field(
        "en",
        max_length=35,
        pattern=_LANG,
        description="The page's language: the heading's and the dates' (zh*: Chinese).",
    )
    heading: str | None = Field(
        None, min_length=1, max_length=200, description="The heading's text (default by lang)."
    )
    heading_level: QueryInt = Field(2, ge=1, le=6, description="The heading's level, 1-6.")
    link: str | None = Field(
        None,
        max_length=2_000,
        description="The link of items stored without a usable url, {id} replaced by the "
        'id (data-recengine-link, e.g. "/post/{id}").',
    )

    @field_validator("show")
    @classmethod
    def _parts(cls, value: str | None) -> str | None:
        if value is None:
            return None
        unknown = [p for p in _PART_SPLIT.split(value.strip()) if p and p not in PARTS]
        if unknown:
            raise ValueError(f"unknown part {unknown[0]!r}: give some of {', '.join(PARTS)}")
        return value

    def as_kwargs(self) -> dict[str, Any]:
        shown = {"layout", "show", "lang", "heading", "heading_level", "link"}
        return {k: v for k, v in super().as_kwargs().items() if k not in shown}

    def shape(self, zone: tzinfo) -> Shape:
        """How the fragment shows the list; dates in ``zone`` (the site's)."""
        parts = tuple(p for p in _PART_SPLIT.split(self.show.strip()) if p) if self.show else None
        return Shape(
            layout=self.layout,
            show=parts,
            lang=self.lang,
            heading=self.heading,
            heading_level=self.heading_level,
            link=self.link,
            zone=zone,
        )


@cache
def fragment_query(related: type[RelatedQuery]) -> type[FragmentQuery]:
    """The fragment's query model with the limits of ``related`` (``build_models``' own; one
    class per class of ``related``, which ``build_models`` builds once per set of limits)."""

    class FragmentQueryModel(related, FragmentQuery):  # type: ignore[misc,valid-type]
        pass

    FragmentQueryModel.__name__ = FragmentQueryModel.__qualname__ = "FragmentQuery"
    return FragmentQueryModel
