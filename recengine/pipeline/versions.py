"""Features under a new IDF model version, and the atomic switch to it: shared by every engine.

The local reindex, the incremental one and the Spark job all end the same way: features are
written under a version readers do not use yet; articles changed meanwhile are caught up; the
switch of the active version and the removal of the old one happen in one transaction under
the writers' lock (``storage.state.begin_write``), so readers go from the complete old state to
the complete new one.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from sqlalchemy.orm import Session, sessionmaker

from recengine.features.tfidf import IdfModel
from recengine.pipeline.featurize import FeatureRow, Featurizer
from recengine.pipeline.parallel import AnalysisPool, Item
from recengine.storage.articles import changed_since
from recengine.storage.db import transaction
from recengine.storage.features import (
    drop_versions_except,
    model_versions,
    replace_features,
    texts_without_features,
)
from recengine.storage.state import begin_write, read_state, set_active_model


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


def database_name(factory: sessionmaker[Session]) -> str:
    """The database a session factory is bound to, password hidden (job identity)."""
    return str(factory.kw["bind"].url.render_as_string(hide_password=True))


def fit_params(settings_params: dict[str, Any], seq: int, engine: str) -> dict[str, Any]:
    """Stored model params: the feature settings, plus when and how the model was fitted."""
    return {**settings_params, "fit": {"seq": seq, "indexed_seq": seq, "engine": engine}}


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
            }
            for aid, f in rows
        ],
    )


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
        with transaction(factory) as session:
            write_features(session, version, rows)
        done.extend(i for i, _ in rows)
    return done


def catch_up_and_switch(
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    model: IdfModel,
    version: int,
    seq: int,
    batch_size: int,
    progress: Progress,
    on_switch: Callable[[Session, list[int]], object],
) -> int:
    """Recompute articles changed since ``seq`` under the new model, then switch to it.

    Args:
        on_switch: called inside the switch transaction, after the switch, with the ids of the
            articles caught up; rebuilds what depends on the features (the clusters).

    Returns:
        How many article rows were recomputed.
    """
    # (seq + 1, 0) is the position just after every row of sequence number seq.
    position, done = (seq + 1, 0), 0
    changed: list[int] = []

    def step(session: Session) -> bool:
        nonlocal position, done
        rows = changed_since(session=session, after=position, limit=batch_size)
        if not rows:
            return False
        stats = [featurizer.analyze(r.title, r.content) for r in rows]
        features = featurizer.features(stats, model)
        write_features(session, version, [(r.id, f) for r, f in zip(rows, features, strict=True)])
        position, done = (rows[-1].seq, rows[-1].id), done + len(rows)
        changed.extend(r.id for r in rows)
        progress.update(len(rows))
        return True

    progress.start("catch-up", None)
    more = True
    while more:  # outside the writers' lock: may take a while if writers are busy
        with transaction(factory) as session:
            more = step(session)
    with transaction(factory) as session:  # under the lock: the last few, then the switch
        begin_write(session=session)
        while step(session):
            pass
        set_active_model(session=session, version=version)
        drop_versions_except(session=session, keep=[version])
        on_switch(session, changed)
    return done


def drop_stale_versions(factory: sessionmaker[Session], keep: Collection[int | None]) -> None:
    """Delete models and features of every version not in ``keep`` (left by abandoned runs).

    Takes the writers' lock only when there is something to delete.
    """
    wanted = {v for v in keep if v is not None}
    with transaction(factory) as session:
        stale = set(model_versions(session=session)) - wanted
    if stale:
        with transaction(factory) as session:
            begin_write(session=session)
            drop_versions_except(session=session, keep=wanted)
