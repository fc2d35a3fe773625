"""``/api/v1/articles``: upsert (one or a batch, atomic), list, read, delete."""

from __future__ import annotations

from functools import partial

from flask import current_app
from flask.typing import ResponseReturnValue

from recengine.errors import InvalidRecord, ModelMissing, NotFound
from recengine.recommend.articles import list_articles, show_article
from recengine.recommend.duplicates import duplicates_of
from recengine.recommend.lists.fragment import render
from recengine.recommend.ranking import split_key
from recengine.web.api.answers import mark
from recengine.web.api.routing import Router, validated_body, validated_query
from recengine.web.schemas.core import (
    ArticleOut,
    ArticlesOut,
    ArticlesQuery,
    ArticleUpsert,
    Deleted,
    DuplicatesOut,
    Models,
    RelatedOut,
    RelatedQuery,
    UpsertResult,
)
from recengine.web.schemas.fragment import FragmentQuery, fragment_query
from recengine.web.services import services, session


def upsert() -> UpsertResult:
    """Store one article or a batch of articles (by id), all or nothing.

    An identical record changes nothing ("unchanged"). A field that is not an article field is
    refused, or with ``ingest.extra_fields = "report"`` left out and listed in
    ``ignored_fields``. A batch is one transaction: either every
    record is stored or, on any error, none is. Within a batch the last record of an id wins.
    New and changed articles are vectorised and fingerprinted at once (with the active model).
    """
    ingester = services().ingester
    body = validated_body(ArticleUpsert)
    records = [r.with_timezone(ingester.zone) for r in body.records()]
    summary = ingester.upsert_atomic(records)
    return UpsertResult(
        read=summary.read,
        inserted=summary.inserted,
        updated=summary.updated,
        unchanged=summary.unchanged,
        superseded=summary.superseded,
        features_pending=summary.features_pending,
        ids=list(dict.fromkeys(r.id for r in records)),
        ignored_fields={r.id: list(r.ignored_fields) for r in records if r.ignored_fields},
    )


def read(article_id: str) -> ArticleOut:
    """The stored article (the body of ``recengine article show --format json``)."""
    return ArticleOut.model_validate(show_article(session=session(), external_id=article_id))


def listing() -> ArticlesOut:
    """The live articles, page by page in storage order (``recengine article list``): pass
    ``next_after`` as ``after`` for the next page; it is null on the last one."""
    query = validated_query(ArticlesQuery)
    page = list_articles(session=session(), after=query.after, limit=query.limit)
    return ArticlesOut.model_validate(page)


def delete(article_id: str) -> Deleted:
    """Delete the article: it leaves every result at once (storing it again brings it back).

    Its near-duplicate cluster is updated in the same transaction (a new canonical is chosen
    when it was the canonical).
    """
    services().ingester.delete([article_id])
    return Deleted(id=article_id)


def related(article_id: str) -> RelatedOut:
    """Articles a reader of this one wants next: related, never a near-duplicate of it.

    Ranked by cosine of the TF-IDF vectors; a near-duplicate of the article, or of an item
    above, is left out and listed in ``suppressed`` with ``duplicate_of``, the distance and the
    rule that matched (``rule``, its figure ``score``, ``via`` the canonical it met through). The
    worker's index follows SQL before answering (``index.sync_interval_s``), so an article
    written through any worker shows up here from the next request.

    Editors' overrides hold from their commit: pins first (``reasons.pinned``), excluded and
    blocked articles never shown. In an A/B test the list's ranking is its variant's
    (``variant``), chosen by ``reader`` (else ``session``).
    """
    query = validated_query(RelatedQuery)
    answer = services().related.answer(
        article_id,
        session=session(),
        k=query.k,
        offset=query.offset,
        split_by=split_key(query.reader, query.session),
        **query.as_kwargs(),
    )
    mark(answer.version, answer.seq)
    return RelatedOut.model_validate(answer.body)


def related_html(article_id: str) -> ResponseReturnValue:
    """The related list as an HTML fragment: the widget's markup, escaped, for pages that run
    no script (server-side includes, AMP, RSS/Atom items, e-mail).

    The same list as ``/related`` with the same parameters, cacheable as it is; shown as
    ``layout``, ``show``, ``lang``, ``heading``, ``heading_level`` and ``link`` say (the
    widget's attributes), dates in ``ingest.naive_timezone``. Style it with ``/widget.css``
    (or the site's own rules for the ``recengine-*`` classes). An empty body: nothing related.
    """
    query = validated_query(FragmentQuery)
    answer = services().related.answer(
        article_id,
        session=session(),
        k=query.k,
        offset=query.offset,
        split_by=split_key(query.reader, query.session),
        **query.as_kwargs(),
    )
    mark(answer.version, answer.seq)
    shape = query.shape(services().settings.ingest.zone)
    html = render(answer.body["article"], answer.body["items"], shape)
    return current_app.response_class(html, mimetype="text/html")


def duplicates(article_id: str) -> DuplicatesOut:
    """The article's near-duplicate cluster, canonical first, each member judged against it.

    Read from SQL (``cluster_members``), which ingest keeps current: every worker answers the
    same from the moment a write commits. Before the first model, 503 ``model_missing`` (no
    cluster can have been formed yet), as for related lists.
    """
    try:  # the index says which changes the answer has seen (clusters come from SQL)
        snap = services().index.current(session=session())
    except ModelMissing:
        snap = None
    found = duplicates_of(
        session=session(),
        external_id=article_id,
        criterion=services().criterion,
        compared=services().compared,
    )
    if snap is not None:
        mark(snap.version, snap.seq)
    return DuplicatesOut.model_validate(found.as_dict())


def init_app(router: Router, models: Models) -> None:
    path = "/api/v1/articles/<id:article_id>"  # see recengine.web.api.paths
    add = partial(router.add, tag="articles")
    add(
        "/api/v1/articles",
        upsert,
        method="POST",
        write=True,
        ok=UpsertResult,
        json=models.article_upsert,
        errors=(InvalidRecord,),
    )
    add("/api/v1/articles", listing, method="GET", write=False, ok=ArticlesOut, query=ArticlesQuery)
    add(path, read, method="GET", write=False, ok=ArticleOut, errors=(NotFound,))
    add(path, delete, method="DELETE", write=True, ok=Deleted, errors=(NotFound,))
    add(
        f"{path}/related",
        related,
        method="GET",
        write=False,
        ok=RelatedOut,
        query=models.related_query,
        errors=(NotFound, ModelMissing),
    )
    add(
        f"{path}/related.html",
        related_html,
        method="GET",
        write=False,
        ok=None,
        ok_description="The related list as an HTML fragment (text/html; empty: none).",
        query=fragment_query(models.related_query),
        errors=(NotFound, ModelMissing),
    )
    add(
        f"{path}/duplicates",
        duplicates,
        method="GET",
        write=False,
        ok=DuplicatesOut,
        errors=(NotFound, ModelMissing),
    )
