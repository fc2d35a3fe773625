"""Related lists as files, for static-site generators (``recengine export related``).

One file per live article in the output folder, named by its id as ``encodeURIComponent``
writes it (``javaguide%2FREADME.md.json``; an id of letters, digits, ``-_.`` is its own name):

* ``json``: the body of ``GET /api/v1/articles/<id>/related`` (a Hugo, Hexo or Jekyll data file),
  each item's ``url`` and ``image`` those a page may use (``recommend.lists.fragment``'s rules,
  the ``link`` template filling a missing url; null otherwise) and ``<``, ``>``, ``&`` written as
  ``\\u003c``..., so the file is safe inside a ``<script>`` too;
* ``html``: the fragment of ``GET .../related.html`` (the widget's markup, escaped).

**Incremental.** ``.recengine-export.json`` in the folder records the change sequence and model
version the export was made at, how (format, k, shape) and each list's items. The next export
recomputes only the lists that can have changed since: those of the articles written or deleted
since that sequence (``--since`` names another), those that name such an article, and those of
the articles among a changed article's nearest (``2 k`` of its own list: cosine is symmetric, so
an article that enters a list has that list's article among its own nearest). A file is
rewritten only when its bytes change (a generator's own incremental build sees only real
changes), and a deleted article's file is removed. A new model version (a reindex), another
format or shape, or ``full`` recomputes every list; editors' overrides and A/B tests take no
change sequence: export ``full`` after changing them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

from sqlalchemy.orm import Session, sessionmaker

from recengine.errors import NotFound
from recengine.recommend.lists.fragment import Shape, image_of, link_of, render
from recengine.recommend.related import RelatedArticles
from recengine.storage.db import transaction
from recengine.storage.rows.articles import articles_changed
from recengine.storage.state import read_state

Format = Literal["json", "html"]
MANIFEST = ".recengine-export.json"
NEAREST = 2  # x k: how far a changed article's own list is looked at (module docstring)


@dataclass
class Exported:
    """What an export did."""

    written: int = 0  # files written (new or changed)
    unchanged: int = 0  # lists recomputed whose file was already right
    removed: int = 0  # files of deleted articles removed
    seq: int = 0  # the change sequence the export is complete up to
    full: bool = True  # every list recomputed (else only those that can have changed)
    since: int | None = None  # the sequence an incremental export started after


@dataclass
class _Manifest:
    seq: int
    version: int | None
    how: dict[str, Any]
    lists: dict[str, list[str]] = field(default_factory=dict)


def file_name(article: str, fmt: Format) -> str:
    """The file of ``article``'s list: its id as ``encodeURIComponent`` writes it."""
    return quote(article, safe="-_.!~*'()") + "." + fmt


def export_related(
    *,
    factory: sessionmaker[Session],
    related: RelatedArticles,
    out: Path,
    fmt: Format,
    k: int,
    shape: Shape,
    since: int | None = None,
    full: bool = False,
) -> Exported:
    """Write the related lists of every live article (or only those that can have changed)
    into ``out`` (created if missing); see the module docstring."""
    out.mkdir(parents=True, exist_ok=True)
    how = {"format": fmt, "k": k, "shape": _shape_key(shape)}
    old = _load(out / MANIFEST)
    with transaction(factory) as session:
        state = read_state(session=session)
        if old is not None and (old.how != how or old.version != state.active_model_version):
            old = None  # made otherwise: every list again
        start = since if since is not None else (None if full or old is None else old.seq)
        result = Exported(seq=state.seq, full=start is None, since=start)
        changed = articles_changed(session=session, after_seq=start if start is not None else -1)
        lists = dict(old.lists) if old is not None else {}
        live = [a for a, alive in changed if alive]
        gone = [a for a, alive in changed if not alive]
        todo = set(live) if start is None else _affected(session, related, k, live, gone, lists)
        for article in gone:
            lists.pop(article, None)
            result.removed += _remove(out / file_name(article, fmt))
        for article in sorted(todo):
            body = _body(session, related, article, k)
            if body is None:  # deleted meanwhile
                lists.pop(article, None)
                result.removed += _remove(out / file_name(article, fmt))
                continue
            lists[article] = [item["id"] for item in body["items"]]
            wrote = _write(out / file_name(article, fmt), _content(body, fmt, shape))
            result.written += wrote
            result.unchanged += not wrote
    manifest = _Manifest(state.seq, state.active_model_version, how, lists)
    _write(out / MANIFEST, json.dumps(manifest.__dict__, ensure_ascii=False, sort_keys=True))
    return result


def _affected(
    session: Session,
    related: RelatedArticles,
    k: int,
    live: list[str],
    gone: list[str],
    lists: Mapping[str, list[str]],
) -> set[str]:
    """The lists that can have changed since the sequence the changes are counted from."""
    changed = set(live) | set(gone)
    todo = set(live) | {a for a, items in lists.items() if changed & set(items)}
    for article in live:
        body = _body(session, related, article, min(NEAREST * k, related.settings.related.max_k))
        todo.update(item["id"] for item in (body or {}).get("items", []))
    return todo - set(gone)


def _body(session: Session, related: RelatedArticles, article: str, k: int) -> Any:
    try:
        return related.related(article, session=session, k=k)
    except NotFound:
        return None


def _content(body: dict[str, Any], fmt: Format, shape: Shape) -> str:
    if fmt == "html":
        return render(body["article"], body["items"], shape)
    items = [_usable(item, shape.link) for item in body["items"]]
    text = json.dumps({**body, "items": items}, ensure_ascii=False, indent=2)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e") + "\n"


def _usable(item: Mapping[str, Any], link: str | None) -> dict[str, Any]:
    return {**item, "url": link_of(item, link), "image": image_of(item.get("image"))}


def _shape_key(shape: Shape) -> dict[str, Any]:
    return {
        "layout": shape.layout,
        "show": list(shape.show) if shape.show else None,
        "lang": shape.lang,
        "heading": shape.heading,
        "heading_level": shape.heading_level,
        "link": shape.link,
        "zone": str(shape.zone),
    }


def _load(path: Path) -> _Manifest | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return _Manifest(int(data["seq"]), data["version"], data["how"], dict(data["lists"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None  # none, or not ours: a full export writes a new one


def _write(path: Path, text: str) -> bool:
    """Write ``text`` to ``path`` unless it holds it already (atomically: a generator reading
    the folder meanwhile sees the old file or the new one). Returns whether it wrote."""
    data = text.encode("utf-8")
    try:
        if path.read_bytes() == data:
            return False
    except OSError:
        pass
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_bytes(data)
    os.replace(temporary, path)
    return True


def _remove(path: Path) -> int:
    try:
        path.unlink()
    except FileNotFoundError:
        return 0
    return 1
