"""The on-disk state of a reindex in progress: what lets one resume after Ctrl-C or ``kill -9``.

Everything lives in ``<data_dir>/reindex/``:

* ``lock``: an exclusive ``flock`` held while a reindex runs: one reindex at a time per data
  directory (a second one fails at once with :class:`ReindexBusy` instead of racing the first);
  the kernel releases it when the holder dies, however it dies.
* ``job.json``: which job this is (database, feature settings, the change sequence it started
  from) and, once pass 1 is done, the version of the new IDF model saved in SQL. Written to a
  temporary file, fsynced and renamed over the old one, so it is always either the old or the
  new content.
* ``spool.bin``: the term counts and passage hashes of pass 1 (:class:`SpoolBatch`), one
  framed record per batch of articles, fsynced after each. Pass 2 reads them back instead of
  tokenizing twice, the switch builds the passage index of them instead of cleaning every
  text again (``spooled_passages``); a resumed pass 1 reads them to rebuild its document
  frequencies and continues after the last article spooled. A record is
  ``<u8 length> <u4 crc32> payload``: a torn tail (a crash in mid-write) fails the length or the
  checksum and is cut off.

The SQL side needs no bookkeeping: features of the new version are written in id order, one
transaction per batch, so the largest article id written under that version says where pass 2
stands. A job whose database, settings or model no longer match is discarded, never trusted.
The spool holds pickles: the data directory must be as private as the database.
"""

from __future__ import annotations

import fcntl
import json
import os
import pickle
import struct
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any, NamedTuple

import numpy as np
import numpy.typing as npt

from recengine.errors import RecengineError
from recengine.features.tfidf import IdfModel
from recengine.files import atomic_write, fsync_dir, remove_temporaries
from recengine.index.neardup.passages import HashArray, Packed, passage_rows
from recengine.pipeline.featurize import Analyzed, FeatureRow, Featurizer, Known
from recengine.pipeline.reindex.spill import Where, remove_spills, spill
from recengine.text.neardup.compare import Compared

# 2: spool records are SpoolBatch (term counts as one matrix per batch); 3: with passages
JOB_FORMAT = 3
_HEADER = struct.Struct("<QI")


class SpoolBatch(NamedTuple):
    """One spool record: article ids (ascending) and what their texts contribute, in order:
    their term counts, and their passage hashes (``rows uint64 (n, 8)``, ``counts int16
    (n,)``, packed by ``index.neardup.passages.passage_rows``) for the new version's passage
    index."""

    ids: list[int]
    analyzed: Analyzed
    passages: tuple[HashArray, npt.NDArray[np.int16]]


Batch = SpoolBatch
# (article id, title, content): what reindex reads from SQL.
Item = tuple[int, str, str]
# What a page of pass 1 asks of its texts beside the spool record: nothing (False), what is
# compared of them returned (True) or spilled into a folder (``pipeline.reindex.spill``).
Asked = bool | Path
# A page of pass 1 for the pool: its items, what it asks beside the record, and optionally the
# encoder vectors it may reuse (``featurize.Known``, in the items' order; a full reindex's, of
# the active version when it has the same encoder settings).
Task = tuple[Sequence[Item], Asked] | tuple[Sequence[Item], Asked, Known | None]


@dataclass(frozen=True)
class Spooled:
    """One batch analysed for the reindex spool.

    Attributes:
        payload: the spool record, ``pickle`` of a :class:`SpoolBatch` (ids in id order).
            Made where the batch was analysed (a worker), so the parent writes it as it came.
        n_docs: articles in the batch.
        df: the batch's document frequencies, term -> articles containing it.
        compared: what the near-duplicate decision compares of each text, in order, when the
            parent asked for it in memory (not spooled: handed to the leader pass,
            ``text.neardup.kept.KeptTexts``).
        spilled: where the same lies on disk, when the parent asked for it spilled
            (``pipeline.reindex.spill``: the file's path, and each text's place in it, in order).
    """

    payload: bytes
    n_docs: int
    df: dict[str, int]
    compared: list[Compared] | None = None
    spilled: tuple[str, list[Where]] | None = None

    @classmethod
    def of(
        cls,
        batch: SpoolBatch,
        compared: list[Compared] | None = None,
        spilled: tuple[str, list[Where]] | None = None,
    ) -> Spooled:
        payload = pickle.dumps(batch, protocol=pickle.HIGHEST_PROTOCOL)
        df = batch.analyzed.counts.doc_frequencies()
        return cls(payload, len(batch.ids), df, compared, spilled)


def features_of_record(
    featurizer: Featurizer, payload: bytes, model: IdfModel, after_id: int
) -> tuple[int, list[tuple[int, FeatureRow]]]:
    """Articles in one spool record, and the features of those with id > ``after_id`` (a
    resumed reindex has written the others already)."""
    batch: SpoolBatch = pickle.loads(payload)
    todo = [k for k, i in enumerate(batch.ids) if i > after_id]
    if not todo:
        return len(batch.ids), []
    done = batch.analyzed.take(todo)
    rows = featurizer.features_of(done.counts, model, done.embeddings)
    return len(batch.ids), list(zip((batch.ids[k] for k in todo), rows, strict=True))


def spool_task(featurizer: Featurizer, task: Task) -> Spooled:
    """:func:`spool_batch` of a pool task."""
    batch, compare, *rest = task
    return spool_batch(featurizer, batch, compare, rest[0] if rest else None)


def spool_batch(
    featurizer: Featurizer,
    batch: Sequence[Item],
    compare: Asked = False,
    known: Known | None = None,
) -> Spooled:
    """The spool record of ``(id, title, content)`` items: ids, text hashes, term counts and
    passage hashes, each text cleaned once (``Featurizer.analyze_texts``; encoder vectors of
    ``known`` reused where the text is the same); with ``compare``,
    what the near-duplicate decision compares of each text too, from the same cleaning:
    returned (``True``), or spilled to a file of this process in the folder it names
    (``pipeline.reindex.spill``; nothing when the disk refuses it: the leader pass computes those
    texts again)."""
    done = featurizer.analyze_texts([(title, content) for _, title, content in batch], known)
    record = SpoolBatch([i for i, _, _ in batch], done.analyzed, passage_rows(done.passages))
    if compare is False:
        return Spooled.of(record)
    texts = [p.compared() for p in done.points]
    if compare is True:
        return Spooled.of(record, texts)
    try:
        return Spooled.of(record, spilled=spill(compare, texts))
    except OSError:
        return Spooled.of(record)


def spooled_passages(batches: Iterable[SpoolBatch]) -> Iterator[Packed]:
    """The passages of the spooled articles whose text has terms (the articles the passage
    index holds, ``PassageKind.needs_terms``: the features pass 2 writes have the same token
    counts), a record at a time, ids ascending."""
    for batch in batches:
        keep = batch.analyzed.counts.n_tokens() > 0
        rows, counts = batch.passages
        yield np.asarray(batch.ids, np.int64)[keep], rows[keep], counts[keep]


@dataclass(frozen=True)
class ModelFile:
    """An IDF model saved to a file (``IdfModel.to_bytes``), so workers load it themselves
    instead of receiving it with every batch."""

    path: Path

    @classmethod
    def write(cls, path: Path, model: IdfModel) -> ModelFile:
        path.write_bytes(model.to_bytes())
        return cls(path)

    def load(self) -> IdfModel:
        return IdfModel.from_bytes(self.path.read_bytes())


class ReindexBusy(RecengineError):
    """Another reindex holds the lock of this data directory."""

    code = "reindex_busy"


@dataclass
class JobRecord:
    """What ``job.json`` holds. ``version`` is set once the new IDF model is saved in SQL."""

    database: str
    params: dict[str, Any]
    start_seq: int
    started_at: str
    engine: str = "local"
    version: int | None = None
    format: int = JOB_FORMAT
    extra: dict[str, Any] = field(default_factory=dict)

    def matches(self, other: JobRecord) -> bool:
        """Same database, settings and engine: the spooled work is still valid."""
        return (self.format, self.database, self.params, self.engine) == (
            other.format,
            other.database,
            other.params,
            other.engine,
        )


class JobDir:
    """The ``reindex/`` directory of a data directory; hold :meth:`lock` while using it.

    Args:
        data_dir: the engine's data directory (created when missing).
    """

    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / "reindex"
        self.job_path = self.path / "job.json"
        self.spool_path = self.path / "spool.bin"
        self._lock: IO[bytes] | None = None

    def lock(self) -> None:
        """Take the exclusive lock, or raise :class:`ReindexBusy` at once."""
        self.path.mkdir(parents=True, exist_ok=True)
        handle = (self.path / "lock").open("ab")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise ReindexBusy(
                f"another reindex is running on {self.path.parent} (lock {self.path / 'lock'})"
            ) from None
        self._lock = handle

    def unlock(self) -> None:
        if self._lock is not None:
            self._lock.close()  # closing releases the flock
            self._lock = None

    def load(self) -> JobRecord | None:
        """The unfinished job, or None when there is none or its file is unreadable."""
        try:
            data = json.loads(self.job_path.read_text("utf-8"))
            return JobRecord(**data)
        except (OSError, ValueError, TypeError):
            return None

    def save(self, job: JobRecord) -> None:
        """Atomically replace ``job.json``."""
        with atomic_write(self.job_path, "w", encoding="utf-8") as handle:
            json.dump(asdict(job), handle, ensure_ascii=False, sort_keys=True)

    def clear(self) -> None:
        """Forget the job: spool first, then the job file (a job without spool restarts);
        the spilled texts of any run (``pipeline.reindex.spill``) with them."""
        for path in (self.spool_path, self.job_path):
            path.unlink(missing_ok=True)
        if self.path.exists():
            remove_spills(self.path)
            remove_temporaries(self.path)
            fsync_dir(self.path)

    def append(self, handle: IO[bytes], batch: Batch) -> None:
        """Append one batch to the spool and make it durable."""
        self.append_payload(handle, pickle.dumps(batch, protocol=pickle.HIGHEST_PROTOCOL))

    def append_payload(self, handle: IO[bytes], payload: bytes) -> None:
        """Append one batch already pickled (``pickle`` of a :data:`Batch`) and make it durable."""
        handle.write(_HEADER.pack(len(payload), zlib.crc32(payload)) + payload)
        handle.flush()
        os.fsync(handle.fileno())

    def open_spool(self) -> IO[bytes]:
        """The spool for appending, after cutting off a torn tail."""
        self.path.mkdir(parents=True, exist_ok=True)
        good = self._valid_length()
        handle = self.spool_path.open("ab")
        handle.truncate(good)
        return handle

    def batches(self) -> Iterator[Batch]:
        """The spooled batches, in order, up to the first torn or corrupt record."""
        for payload in self.payloads():
            batch: Batch = pickle.loads(payload)
            yield batch

    def payloads(self) -> Iterator[bytes]:
        """The spooled batches as stored (each a pickled :data:`Batch`), CRC-checked, in order,
        up to the first torn or corrupt record."""
        return self._records(self.spool_path)

    def spool_size(self) -> int:
        """Bytes of whole, valid records in the spool."""
        return self._valid_length()

    def _valid_length(self) -> int:
        end = 0
        for payload in self._records(self.spool_path):
            end += _HEADER.size + len(payload)
        return end

    @staticmethod
    def _records(path: Path) -> Iterator[bytes]:
        try:
            handle = path.open("rb")
        except FileNotFoundError:
            return
        with handle:
            while len(header := handle.read(_HEADER.size)) == _HEADER.size:
                length, crc = _HEADER.unpack(header)
                payload = handle.read(length)
                if len(payload) != length or zlib.crc32(payload) != crc:
                    return
                yield payload
