"""The index file and the per-process index: rebuilt when missing, corrupt, foreign or stale;
several processes converge on what SQL holds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.index.neardup import NearDupIndex
from recengine.index.store import IndexFileError, IndexMeta, load, save
from recengine.index.synced import SyncedIndex
from recengine.pipeline.dedup import synced_index
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest import Ingester
from recengine.pipeline.reindex import reindex
from recengine.storage.db import transaction
from recengine.storage.fingerprints import SqlFingerprints
from tests.neardup_helpers import corpus


def sql_arrays(factory: sessionmaker[Session], version: int) -> tuple[list[int], list[int]]:
    with factory() as session:
        ids, fps = [], []
        for i, f in SqlFingerprints(session, page=7).scan(version):
            ids += i
            fps += f
    return ids, fps


def answers(index: SyncedIndex, factory: sessionmaker[Session]) -> tuple[list[int], list[int]]:
    with transaction(factory) as session:
        ids, fps = index.sync(SqlFingerprints(session)).arrays()
    return ids.tolist(), fps.tolist()


@pytest.fixture
def loaded(
    factory: sessionmaker[Session], featurizer: Featurizer, data_dir: Path
) -> tuple[Ingester, list[dict[str, object]]]:
    bases, reposts = corpus(data_dir, 25, 5)
    ingester = Ingester(factory, featurizer)
    ingester.ingest_records(bases)
    reindex(factory=factory, featurizer=featurizer)  # writes the index file
    return ingester, reposts


def test_file_is_loaded_then_rebuilt_when_missing_corrupt_or_foreign(
    factory: sessionmaker[Session], settings: Settings, loaded: tuple[Ingester, list]
) -> None:
    path = settings.data_dir / settings.neardup.index_file
    assert path.exists()
    worker = synced_index(settings)
    expected = answers(worker, factory)
    assert worker.stats.loads == 1 and worker.stats.rebuilds == 0
    assert expected[0] and expected == sql_arrays(factory, worker.meta.model_version)  # type: ignore[union-attr]
    blob = bytearray(path.read_bytes())
    corruptions = {
        "flipped byte": lambda: path.write_bytes(
            bytes(blob[:-3] + bytes([blob[-3] ^ 1]) + blob[-2:])
        ),
        "truncated": lambda: path.write_bytes(bytes(blob[:-8])),
        "garbage": lambda: path.write_bytes(b"not an index"),
        "deleted": lambda: path.unlink(),
    }
    for name, corrupt in corruptions.items():
        corrupt()
        fresh = synced_index(settings)
        assert answers(fresh, factory) == expected, name
        assert fresh.stats.rebuilds == 1 and fresh.stats.loads == 0, name
        fresh.save()
    other_k = SyncedIndex(path, k=5)
    assert answers(other_k, factory) == expected and other_k.stats.rebuilds == 1


def test_file_missing_entries_is_not_trusted(
    factory: sessionmaker[Session], settings: Settings, loaded: tuple[Ingester, list]
) -> None:
    path = settings.data_dir / settings.neardup.index_file
    index, meta = load(path)
    ids, _ = index.arrays()
    index.remove(ids[:3])  # a file that claims to be current but lost three articles
    save(path, index, meta)
    worker = synced_index(settings)
    assert len(answers(worker, factory)[0]) == len(ids)
    assert worker.stats.rebuilds == 1


def test_workers_converge_after_writes_by_another_process(
    factory: sessionmaker[Session], settings: Settings, loaded: tuple[Ingester, list]
) -> None:
    ingester, reposts = loaded
    first, second = synced_index(settings), synced_index(settings)
    answers(first, factory), answers(second, factory)
    ingester.ingest_records(reposts)  # written through a third "process"
    victim = reposts[0]["id"]
    ingester.delete([str(victim)])
    a, b = answers(first, factory), answers(second, factory)
    version = first.meta.model_version  # type: ignore[union-attr]
    assert a == b == sql_arrays(factory, version)
    assert first.stats.rebuilds == 0 and first.stats.applied >= len(reposts)
    with factory() as session:
        gone = session.execute(
            text("SELECT id FROM articles WHERE external_id = :x"), {"x": victim}
        ).scalar_one()
    assert gone not in a[0]
    # a stale file (older seq) is caught up, not rebuilt
    third = synced_index(settings)
    assert answers(third, factory) == a and third.stats.loads == 1 and third.stats.applied > 0


def test_a_rolled_back_write_is_forgotten(
    factory: sessionmaker[Session],
    settings: Settings,
    loaded: tuple[Ingester, list],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ingester, reposts = loaded
    before = answers(ingester.dedup.index, factory)

    def crash(**_: object) -> None:
        raise RuntimeError("crash after the index saw the batch, before commit")

    monkeypatch.setattr("recengine.pipeline.dedup.replace_rows", crash)
    with pytest.raises(RuntimeError):
        ingester.ingest_records(reposts)
    monkeypatch.undo()
    assert answers(ingester.dedup.index, factory) == before  # reloaded, not the lost batch
    assert ingester.ingest_records(reposts).inserted == len(reposts)
    assert len(answers(ingester.dedup.index, factory)[0]) == len(before[0]) + len(reposts)


def test_store_round_trip_and_errors(tmp_path: Path) -> None:
    index = NearDupIndex(4)
    index.add(np.array([3, 1, 2]), np.array([1 << 63, 5, (1 << 64) - 1], dtype=np.uint64))
    path = tmp_path / "x.idx"
    save(path, index, IndexMeta(seq=9, model_version=2, source="db", k=4))
    again, meta = load(path)
    assert meta == IndexMeta(9, 2, "db", 4)
    assert [a.tolist() for a in again.arrays()] == [a.tolist() for a in index.arrays()]
    with pytest.raises(IndexFileError):
        load(tmp_path / "missing.idx")
    assert not list(tmp_path.glob("*.tmp"))


def test_refresh_interval_bounds_the_staleness(
    factory: sessionmaker[Session], settings: Settings, loaded: tuple[Ingester, list]
) -> None:
    ingester, reposts = loaded
    worker = SyncedIndex(settings.data_dir / settings.neardup.index_file, 8, refresh_interval=3600)
    with transaction(factory) as session:
        before = len(worker.sync(SqlFingerprints(session), force=False))
    ingester.ingest_records(reposts)
    with transaction(factory) as session:  # within the interval: answers from memory
        assert len(worker.sync(SqlFingerprints(session), force=False)) == before
    with transaction(factory) as session:  # a forced sync (or the interval passing) catches up
        assert len(worker.sync(SqlFingerprints(session))) == before + len(reposts)
