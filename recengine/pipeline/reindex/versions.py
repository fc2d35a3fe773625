"""Features under a new IDF model version, what a reindex reports, whether the active version
is what a reindex would make now, and the removal of old versions: shared by every engine (the
switch itself is ``pipeline.reindex.switch``)."""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version
from pathlib import Path
from typing import Any, Protocol

from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.features.tfidf import IdfModel
from recengine.pipeline.featurize import (
    ENCODER_KEY,
    FeatureRow,
    Featurizer,
    encoder_params,
    model_params,
)
from recengine.pipeline.reindex.pool import AnalysisPool, Item
from recengine.storage.db import transaction
from recengine.storage.rows.articles import count_changed
from recengine.storage.rows.clusters import delete_version
from recengine.storage.rows.features import (
    delete_features,
    delete_model,
    model_summary,
    model_versions,
    replace_features,
    texts_without_features,
)
from recengine.storage.state import begin_write, read_state

DROP_CHUNK = 1_000  # rows of an old version deleted per transaction
WRITE_ROWS = 250  # feature rows per write transaction: each holds the write lock briefly


class InterruptedAfterSwitch(KeyboardInterrupt):
    """Ctrl-C (or SIGINT) arrived after the switch committed: the new model is active.

    The work after the switch (saving index files, removing the old version, clearing the job)
    is an optimisation that servers and the next reindex redo; what the user must hear is that
    the reindex took effect. The message says so.
    """


def raise_if_switched(factory: sessionmaker[Session], version: int | None) -> None:
    """After an interrupt: raise :class:`InterruptedAfterSwitch` if ``version`` is active.

    The switch commits in one statement; an interrupt delivered during or just after it cannot
    tell from the stack whether the commit happened, so the database is asked.
    """
    if version is None:
        return
    with transaction(factory) as session:
        active = read_state(session=session).active_model_version
    if active == version:
        raise InterruptedAfterSwitch(
            f"after the switch: IDF model version {version} is active, the reindex took "
            "effect (index files not saved: servers build their own; the old version's rows "
            "are removed by the next reindex)"
        )


class Progress(Protocol):
    """Receives progress: a phase starts (with its size when known), then work is done."""

    def start(self, phase: str, total: int | None, done: int = 0) -> None: ...

    def update(self, n: int) -> None: ...


class QuietProgress:
    def start(self, phase: str, total: int | None, done: int = 0) -> None:
        pass

    def update(self, n: int) -> None:
        pass


@dataclass(frozen=True)
class ReindexResult:
    version: int
    n_docs: int
    n_terms: int
    caught_up: int
    resumed: bool = False
    mode: str = "full"
    recomputed: int = 0
    reason: str = ""
    # texts the sentence encoder ran on, the others keeping their stored vectors
    # (``reusable_version``); None where not counted (the encoder off; the local engine)
    encoded: int | None = None


def reusable_version(factory: sessionmaker[Session], featurizer: Featurizer) -> int | None:
    """The version whose stored encoder vectors a full reindex may reuse, on either engine:
    the active one, when the encoder is on and that version's vectors were made with the same
    encoder settings (``featurize.encoder_params``: encoder, its version, ``dense.lead_chars``)
    and the same cleaning (``features.strip_boilerplate``); else None (every text is encoded).

    A vector is reused only for a text whose hash now is the article's stored one
    (``featurize.reusable``): the same clean text, the same lead, the same vector. The
    encoder was about half a full reindex's CPU on long articles (38.7 CPU-seconds for 55 MB with
    it, 17-22 without, BENCHMARKS.md issue 50 item 2) and gives nothing new for a text it has
    seen."""
    settings = featurizer.settings
    if not featurizer.encodes:
        return None
    with transaction(factory) as session:
        version = read_state(session=session).active_model_version
        if version is None:
            return None
        params = model_summary(session=session, version=version)[2]
    strip = params.get("features", {}).get("strip_boilerplate")
    same = params.get(ENCODER_KEY) == encoder_params(settings.dense)
    return version if same and strip == settings.features.strip_boilerplate else None


def database_name(factory: sessionmaker[Session]) -> str:
    """The identity of the database (``engine_state.database_id``): a job's, an index file's."""
    with transaction(factory) as session:
        return read_state(session=session).database_id


def fit_params(settings: Settings, seq: int, engine: str) -> dict[str, Any]:
    """Stored model params: the feature settings (``model_params``), plus when and how the
    model was fitted, with what else the reindex's output depends on (:func:`made_with`)."""
    fit = {"seq": seq, "indexed_seq": seq, "engine": engine, "made_with": made_with(settings)}
    return {**model_params(settings), "fit": fit}


def made_with(settings: Settings) -> dict[str, Any]:
    """What a full reindex's output depends on beyond the model's own settings: the clusters'
    rule (``features.hamming_k``, ``[neardup]``; ``list_text_cosine`` is read by lists, not by
    clustering), the dense part's fit (``[dense]``'s fit settings; its index settings are the
    index files' own, checked when a file is loaded), the contents of the stopword and user
    dictionary files (the settings name only their paths), and recengine's version (an upgrade
    may analyse text differently)."""
    t, d = settings.tokenizer, settings.dense
    neardup = settings.neardup.model_dump(exclude={"list_text_cosine"})
    dense = ("dims", "min_articles", "articles_per_dim", "sample", "max_terms", "power_iterations")
    return {
        "recengine": _recengine_version(),
        "files": {"stopwords": _digest(t.stopwords, "builtin"), "user_dict": _digest(t.user_dict)},
        "neardup": {**neardup, "hamming_k": settings.features.hamming_k},
        "dense": {name: getattr(d, name) for name in dense},
    }


def _recengine_version() -> str:
    try:
        return package_version("recengine")
    except PackageNotFoundError:  # a source tree on PYTHONPATH, never installed
        return "unknown"


def _digest(path: str, *builtin: str) -> str:
    """A file's SHA-256 (first 16 hex digits); ``path`` itself when it names no file."""
    if not path or path in builtin:
        return path
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
    except OSError:
        return f"unreadable: {path}"  # the tokenizer will say why; never "unchanged"


@dataclass(frozen=True)
class Freshness:
    """Whether the active model is what a full reindex would make now (``current``), and why.

    ``version``, ``n_docs`` and ``n_terms`` describe the active model when there is one.
    """

    current: bool
    why: str
    version: int | None = None
    n_docs: int = 0
    n_terms: int = 0


def freshness(factory: sessionmaker[Session], settings: Settings) -> Freshness:
    """Whether a full reindex now would make what the active model already is: no article
    changed (stored, edited, deleted, re-clustered) since the change sequence it was fitted at,
    and every setting the model and the reindex's output depend on (:func:`fit_params`) is the
    same. Its IDF, vectors, fingerprints, clusters and dense part are then what a rebuild
    would give (the reindex is deterministic given the articles and these settings)."""
    with transaction(factory) as session:
        version = read_state(session=session).active_model_version
        if version is None:
            return Freshness(False, "no IDF model yet")
        n_docs, n_terms, params = model_summary(session=session, version=version)
        fit = params.get("fit")
        if not isinstance(fit, dict) or "seq" not in fit:
            return Freshness(False, "the active model has no fit record")
        seq = int(fit["seq"])
        changed = count_changed(session=session, after_seq=seq)
    if changed:
        noun = "article" if changed == 1 else "articles"
        return Freshness(False, f"{changed} {noun} changed since the fit at change {seq}")
    if not isinstance(fit.get("made_with"), dict):
        return Freshness(False, "the active model does not record every setting it was made with")
    stored = _flat({**{k: v for k, v in params.items() if k != "fit"}, **fit["made_with"]})
    wanted = _flat({**model_params(settings), **made_with(settings)})
    differ = sorted(k for k in stored.keys() | wanted.keys() if stored.get(k) != wanted.get(k))
    if differ:
        shown = ", ".join(f"{k} {stored.get(k)!r} -> {wanted.get(k)!r}" for k in differ[:5])
        more = f" and {len(differ) - 5} more" if len(differ) > 5 else ""
        return Freshness(False, f"settings changed since the fit: {shown}{more}")
    return Freshness(
        True,
        f"IDF model version {version} was fitted at change {seq} on {n_docs} articles with "
        "these settings, and no article has changed since",
        version,
        n_docs,
        n_terms,
    )


def _flat(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}`` (lists kept whole)."""
    out: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, dict) and value:
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def write_features(session: Session, version: int, rows: Sequence[tuple[int, FeatureRow]]) -> None:
    """Write ``(article id, features)`` under ``version`` (replacing what was there)."""
    replace_features(
        session=session,
        version=version,
        rows=[
            {
                "article_id": aid,
                "fingerprint": f.fingerprint,
                "vector": f.vector,
                "n_tokens": f.n_tokens,
                "embedding": f.embedding,
            }
            for aid, f in rows
        ],
    )


def store_features(
    factory: sessionmaker[Session], version: int, rows: Sequence[tuple[int, FeatureRow]]
) -> None:
    """:func:`write_features` in short transactions of ``WRITE_ROWS`` rows, in the given order
    (ascending ids keep a reindex's "largest id written" a true resume point): on SQLite every
    write transaction holds the only write lock, so a long one makes every writer wait."""
    for start in range(0, len(rows), WRITE_ROWS):
        with transaction(factory) as session:
            write_features(session, version, rows[start : start + WRITE_ROWS])


def fill_missing(
    factory: sessionmaker[Session],
    pool: AnalysisPool,
    model: IdfModel,
    version: int,
    batch_size: int,
    scratch: Path,
) -> list[int]:
    """Features under ``version`` for every live article that has none yet; returns their ids.

    For engines whose input may not cover the database (a Spark job reading an export).
    """

    def pages() -> Iterator[list[Item]]:
        after = 0
        while True:
            with transaction(factory) as session:
                rows = texts_without_features(
                    session=session, version=version, after_id=after, limit=batch_size
                )
            if not rows:
                return
            after = rows[-1].id
            yield [(r.id, r.title, r.content) for r in rows]

    done: list[int] = []
    stats = pool.analyze_batches(pages())
    for rows in pool.features_batches(stats, model, scratch):
        store_features(factory, version, rows)
        done.extend(i for i, _ in rows)
    return done


def drop_stale_versions(
    factory: sessionmaker[Session], keep: Collection[int | None], chunk: int = DROP_CHUNK
) -> None:
    """Delete the models, features and clusters of every version not in ``keep`` (the old
    version after a switch; what an abandoned run left).

    Rows go ``chunk`` at a time, one short transaction each: readers and writers use only the
    active version, and a large corpus's old rows never hold the write lock for long. The
    model row goes last, under the writers' lock (nothing else is left to cascade).
    """
    wanted = {v for v in keep if v is not None}
    with transaction(factory) as session:
        stale = sorted(set(model_versions(session=session)) - wanted)
    for version in stale:
        while True:
            with transaction(factory) as session:
                gone = delete_features(session=session, version=version, limit=chunk)
                gone += delete_version(session=session, version=version, limit=chunk)
            if not gone:
                break
        with transaction(factory) as session:
            begin_write(session=session)
            delete_model(session=session, version=version)
