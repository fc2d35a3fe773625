"""The index file and the per-process index: rebuilt when missing, corrupt, foreign or stale;
several processes converge on what SQL holds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.derived.indexes import index_directory
from recengine.derived.neardup import NearDupKind, neardup_follower
from recengine.index.container import FileHeader, IndexFileError, load_arrays, save_arrays
from recengine.index.follower import Follower
from recengine.index.neardup.radius import NearDupIndex
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.full import reindex
from recengine.storage.db import transaction
from recengine.storage.rows.index_rows import SqlIndexRows
from tests.neardup_helpers import corpus

Index = Follower[NearDupIndex]


def sql_arrays(factory: sessionmaker[Session], version: int) -> tuple[list[int], list[int]]:
    with factory() as session:
        ids, fps, last = [], [], 0
        rows = SqlIndexRows(session)
        while page := rows.live(
            version=version, fields=("fingerprint",), needs_terms=True, after_id=last, limit=7
        ):
            ids += [r.id for r in page]
            fps += [r.fingerprint for r in page]
            last = page[-1].id
    return ids, fps


def answers(index: Index, factory: sessionmaker[Session]) -> tuple[list[int], list[int]]:
    with transaction(factory) as session:
        held = index.sync(SqlIndexRows(session))
        assert held is not None
        ids, fps = held.index.arrays()
    return ids.tolist(), fps.tolist()


def index_file(settings: Settings) -> Path:
    """The newest near-duplicate index file."""
    folder = index_directory(settings, "neardup")
    assert folder is not None
    files = sorted(folder.glob("neardup-*.idx"), reverse=True)
    assert files, f"no index file in {folder}"
    return files[0]


def version_of(index: Index) -> int:
    assert index.held is not None
    return index.held.version


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
    path = index_file(settings)
    assert path.exists()
    worker = neardup_follower(settings)
    expected = answers(worker, factory)
    assert worker.stats.loads == 1 and worker.stats.rebuilds == 0
    assert expected[0] and expected == sql_arrays(factory, version_of(worker))
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
        fresh = neardup_follower(settings)
        assert answers(fresh, factory) == expected, name
        assert fresh.stats.rebuilds == 1 and fresh.stats.loads == 0, name
        assert index_file(settings) == path, name  # the build saved it again
    other_k = Follower(NearDupKind(5), path.parent)
    assert answers(other_k, factory) == expected and other_k.stats.rebuilds == 1


def test_file_missing_entries_is_not_trusted(
    factory: sessionmaker[Session], settings: Settings, loaded: tuple[Ingester, list]
) -> None:
    path = index_file(settings)
    header, arrays = load_arrays(path)
    ids = arrays["ids"]
    lost = {"ids": ids[3:].copy(), "fingerprints": arrays["fingerprints"][3:].copy()}
    save_arrays(path, header, lost)  # a file that claims to be current but lost three articles
    worker = neardup_follower(settings)
    assert len(answers(worker, factory)[0]) == len(ids)
    assert worker.stats.rebuilds == 1


def test_workers_converge_after_writes_by_another_process(
    factory: sessionmaker[Session], settings: Settings, loaded: tuple[Ingester, list]
) -> None:
    ingester, reposts = loaded
    first, second = neardup_follower(settings), neardup_follower(settings)
    answers(first, factory), answers(second, factory)
    ingester.ingest_records(reposts)  # written through a third "process"
    victim = reposts[0]["id"]
    ingester.delete([str(victim)])
    a, b = answers(first, factory), answers(second, factory)
    version = version_of(first)
    assert a == b == sql_arrays(factory, version)
    assert first.stats.rebuilds == 0 and first.stats.applied >= len(reposts)
    with factory() as session:
        gone = session.execute(
            text("SELECT id FROM articles WHERE external_id = :x"), {"x": victim}
        ).scalar_one()
    assert gone not in a[0]
    # a stale file (older seq) is caught up, not rebuilt
    third = neardup_follower(settings)
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

    monkeypatch.setattr("recengine.pipeline.clusters.upkeep.replace_member_rows", crash)
    with pytest.raises(RuntimeError):
        ingester.ingest_records(reposts)
    monkeypatch.undo()
    assert answers(ingester.dedup.index, factory) == before  # reloaded, not the lost batch
    assert ingester.ingest_records(reposts).inserted == len(reposts)
    assert len(answers(ingester.dedup.index, factory)[0]) == len(before[0]) + len(reposts)


def test_store_round_trip_and_errors(tmp_path: Path) -> None:
    index = NearDupIndex(4)
    index.add(np.array([3, 1, 2]), np.array([1 << 63, 5, (1 << 64) - 1], dtype=np.uint64))
    kind = NearDupKind(4)
    path = tmp_path / "x.idx"
    save_arrays(path, FileHeader("neardup", "db", 2, 9, kind.params()), kind.arrays(index))
    header, arrays = load_arrays(path)
    again = kind.restore(arrays)
    assert header == FileHeader("neardup", "db", 2, 9, {"k": 4})
    assert [a.tolist() for a in again.arrays()] == [a.tolist() for a in index.arrays()]
    with pytest.raises(IndexFileError):
        load_arrays(tmp_path / "missing.idx")
    assert not list(tmp_path.glob("*.tmp"))


def test_refresh_interval_bounds_the_staleness(
    factory: sessionmaker[Session], settings: Settings, loaded: tuple[Ingester, list]
) -> None:
    ingester, reposts = loaded
    worker = Follower(NearDupKind(8), index_file(settings).parent, interval=3600)

    def size(fresh: bool) -> int:
        with transaction(factory) as session:
            held = worker.sync(SqlIndexRows(session), fresh=fresh)
            assert held is not None
            return len(held.index)

    before = size(fresh=False)
    ingester.ingest_records(reposts)
    assert size(fresh=False) == before  # within the interval: answers from memory
    assert size(fresh=True) == before + len(reposts)  # a forced sync (or the interval passing)
