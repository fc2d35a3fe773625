"""Ingest through the Python API on real SQLite and PostgreSQL databases."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from recengine.cli import main
from recengine.cli.context import CliContext
from recengine.config import Settings, load_settings
from recengine.features.tfidf import SparseVector
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.full import reindex
from recengine.storage.models import Article, ArticleFeatures
from recengine.storage.state import read_state
from tests.factories import javaguide_records, record

RECENGINE = str(Path(sys.executable).with_name("recengine"))  # the installed console script


def snapshot(factory: sessionmaker[Session]) -> dict[str, tuple[object, ...]]:
    with factory() as session:
        rows = session.execute(
            select(
                Article.external_id,
                Article.record_hash,
                Article.seq,
                Article.deleted_at,
                ArticleFeatures.fingerprint,
                ArticleFeatures.vector,
            ).outerjoin(ArticleFeatures, ArticleFeatures.article_id == Article.id)
        ).all()
    return {r[0]: tuple(r[1:]) for r in rows}


@pytest.fixture
def cli(settings: Settings, factory: sessionmaker[Session]) -> Any:
    """The command line on the migrated test database: ``cli("ingest", path)``; settings
    changed with ``ingest={...}``, standard input given as ``stdin``."""
    runner = CliRunner()

    def invoke(*args: str, stdin: bytes | None = None, **overrides: dict[str, Any]) -> Any:
        data = settings.model_dump(mode="json")
        for key, value in overrides.items():
            data[key] = {**data[key], **value}
        ctx = CliContext(load_settings(data))
        return runner.invoke(main, list(args), obj=ctx, input=stdin)

    return invoke


def stored(factory: sessionmaker[Session]) -> dict[str, Article]:
    with factory() as session:
        return {a.external_id: a for a in session.execute(select(Article)).scalars()}


def stored_tags(factory: sessionmaker[Session]) -> dict[str, list[str]]:
    with factory() as session:
        return {r.external_id: list(r.tags) for r in session.execute(select(Article)).scalars()}


@pytest.fixture
def ingester(factory: sessionmaker[Session], featurizer: Featurizer) -> Ingester:
    return Ingester(factory, featurizer)


def test_first_ingest_then_reindex_computes_features(
    ingester: Ingester, factory: sessionmaker[Session], featurizer: Featurizer, data_dir: Path
) -> None:
    records = javaguide_records(data_dir, 40)
    summary = ingester.ingest_records(records)
    assert (summary.read, summary.inserted, summary.rejected) == (40, 40, 0)
    assert summary.features_pending == 40  # no IDF model yet
    result = reindex(factory=factory, featurizer=featurizer, batch_size=7)
    assert result.n_docs == 40 and result.n_terms > 1000
    with factory() as session:
        assert read_state(session=session).active_model_version == result.version
        vectors = session.scalars(select(ArticleFeatures.vector)).all()
    assert len(vectors) == 40
    assert all(len(SparseVector.from_bytes(v)) > 0 for v in vectors)


def test_reingest_changes_nothing(
    ingester: Ingester, factory: sessionmaker[Session], featurizer: Featurizer, data_dir: Path
) -> None:
    records = javaguide_records(data_dir, 20)
    ingester.ingest_records(records)
    reindex(factory=factory, featurizer=featurizer)
    before = snapshot(factory)
    summary = ingester.ingest_records(records)
    assert (summary.inserted, summary.updated, summary.unchanged) == (0, 0, 20)
    assert snapshot(factory) == before


def test_changed_article_is_recomputed(
    ingester: Ingester, factory: sessionmaker[Session], featurizer: Featurizer
) -> None:
    ingester.ingest_records([record(i) for i in range(5)])
    reindex(factory=factory, featurizer=featurizer)
    before = snapshot(factory)
    summary = ingester.ingest_records(
        [
            record(1, content="<p>完全不同的内容：深度学习与神经网络训练技巧</p>"),
            record(2, tags=["数据库", "索引"]),
        ]
    )
    assert (summary.updated, summary.unchanged) == (2, 0)
    after = snapshot(factory)
    assert after["a1"][3] != before["a1"][3]  # new text: new fingerprint
    assert after["a1"][4] != before["a1"][4]
    assert after["a2"][3:] == before["a2"][3:]  # only tags changed: same features
    assert after["a2"][0] != before["a2"][0]
    assert after["a0"] == before["a0"]


def test_bad_records_are_rejected_and_the_rest_go_in(
    ingester: Ingester, factory: sessionmaker[Session]
) -> None:
    summary = ingester.ingest_records(
        [
            record(1),
            {"title": "no id"},
            record(2, title="", content=""),
            record(3, published_at="not a date"),
            record(4),
        ]
    )
    assert (summary.inserted, summary.rejected) == (2, 3)
    assert [(r.line, r.id) for r in summary.rejections] == [(2, None), (3, "a2"), (4, "a3")]
    assert "published_at" in summary.rejections[2].reason
    with factory() as session:
        assert session.scalar(select(func.count()).select_from(Article)) == 2


def test_last_record_of_an_id_in_a_batch_wins(
    ingester: Ingester, factory: sessionmaker[Session]
) -> None:
    summary = ingester.ingest_records([record(1, title="旧"), record(1, title="新")])
    assert (summary.inserted, summary.superseded) == (1, 1)
    with factory() as session:
        assert session.scalars(select(Article.title)).all() == ["新"]


def test_a_failing_batch_writes_nothing(
    factory: sessionmaker[Session], featurizer: Featurizer
) -> None:
    class Exploding(Featurizer):
        def features_of(self, *args):  # type: ignore[no-untyped-def]
            raise RuntimeError("boom")

    good = Ingester(factory, featurizer)
    good.ingest_records([record(0)])
    reindex(factory=factory, featurizer=featurizer)
    before = snapshot(factory)
    bad = Ingester(factory, Exploding(featurizer.settings, featurizer.tokenizer))
    with pytest.raises(RuntimeError, match="boom"):
        bad.ingest_records([record(1), record(0, title="改")])
    assert snapshot(factory) == before
    with factory() as session:
        assert read_state(session=session).seq == 2  # the failed batch took no number


def test_features_follow_the_active_model_without_reindex(
    ingester: Ingester, factory: sessionmaker[Session], featurizer: Featurizer
) -> None:
    ingester.ingest_records([record(i) for i in range(3)])
    reindex(factory=factory, featurizer=featurizer)
    summary = ingester.ingest_records([record(10, content="<p>新文章：缓存与数据库一致性</p>")])
    assert summary.features_pending == 0
    assert snapshot(factory)["a10"][3] is not None


@settings(
    suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=10, deadline=None
)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=12), st.randoms())
def test_ingest_is_idempotent_in_any_order(
    ingester: Ingester, factory: sessionmaker[Session], ids: list[int], rnd: object
) -> None:
    records = [record(i, title=f"标题{i}-{len(ids)}") for i in ids]
    ingester.ingest_records(records)
    first = snapshot(factory)
    shuffled = list(records)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    # Re-ingesting the distinct final records in any order changes nothing.
    finals = list({r["id"]: r for r in records}.values())
    rnd.shuffle(finals)  # type: ignore[attr-defined]
    summary = ingester.ingest_records(finals)
    assert summary.unchanged == len(finals)
    assert snapshot(factory) == first


def test_a_csv_tag_cell_keeps_multi_word_tags(
    cli: Any, factory: sessionmaker[Session], tmp_path: Path
) -> None:
    path = tmp_path / "tags.csv"
    path.write_text(
        'id,title,tags\nj1,Spring 入门,"Spring Boot;Spring Cloud"\n'
        'j2,中文,"机器 学习，深度 学习"\n',
        encoding="utf-8",
    )
    result = cli("ingest", str(path), "--no-reindex")
    assert result.exit_code == 0, result.output
    assert stored_tags(factory) == {
        "j1": ["Spring Boot", "Spring Cloud"],
        "j2": ["机器 学习", "深度 学习"],
    }


def test_the_csdn_layout_keeps_tags_with_a_space(
    cli: Any, factory: sessionmaker[Session], data_dir: Path
) -> None:
    result = cli("ingest", str(data_dir / "csdn-blog-100" / "csdn_blog_100.tsv"), "--no-reindex")
    assert result.exit_code == 0, result.output
    tags = stored_tags(factory)
    assert tags["321"][:2] == ["internet", "产品"]
    assert sum("sql server" in t for t in tags.values()) == 2


def test_the_real_javaguide_file_goes_in_with_its_bodies_or_not_at_all(
    cli: Any, factory: sessionmaker[Session], data_dir: Path
) -> None:
    """Its records name the text ``body`` and the tags ``keywords``, and carry a ``section``."""
    path = data_dir / "javaguide" / "javaguide.jsonl"
    refused = cli("ingest", str(path), "--json", "--no-reindex")
    summary = json.loads(refused.stdout.splitlines()[0])
    assert refused.exit_code == 1 and summary["rejected"] == summary["read"] == 429
    assert "unknown field 'section'" in summary["rejections"][0]["reason"]
    assert stored(factory) == {}

    result = cli("ingest", str(path), "--no-reindex", ingest={"extra_fields": "report"})
    assert result.exit_code == 0, result.output
    assert "inserted 429, " in result.stdout and "with fields left out 429" in result.stdout
    assert "left out of line 1 (id javaguide/README.md): 'section'" in result.stderr
    articles = stored(factory)
    source = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert len(articles) == 429
    for r in source:
        article = articles[r["id"]]
        assert article.content == r["body"].strip() and article.content
        assert article.tags == list(dict.fromkeys(t.strip() for t in r["tags"] + r["keywords"]))


def test_a_csv_column_that_is_no_field_refuses_the_file_or_is_reported(
    cli: Any, factory: sessionmaker[Session], tmp_path: Path
) -> None:
    path = tmp_path / "cms.csv"
    path.write_text("id,title,body,views\nc1,标题,正文,12\n", encoding="utf-8")
    refused = cli("ingest", str(path), "--no-reindex")
    assert refused.exit_code == 2 and "unknown field 'views'" in refused.output
    assert stored(factory) == {}
    result = cli("ingest", str(path), "--no-reindex", ingest={"extra_fields": "report"})
    assert result.exit_code == 0 and "left out of line 2 (id c1): 'views'" in result.stderr
    assert stored(factory)["c1"].content == "正文"


# What `recengine ingest` may map: it needs ~180 MB with one OpenBLAS thread and ~250 MB with
# the most this OpenBLAS starts (MAX_THREADS=64), whatever the machine. The record is more than
# the limit, so a reader that held it fails (MemoryError); the readers count and drop it. (The
# test had 1.2 GB against 800 MB: 2.4 times the reading, mostly the kernel's zero pages, for the
# same check: its 8 cases took 30 s of CPU, now 13.)
ADDRESS_SPACE = 400_000_000
LINE = 500_000_000  # bytes of one record
HUGE = {  # format: (before the hole of zeros, after it)
    "jsonl": (b"", b'\n{"id": "ok", "title": "t"}\n'),
    "json": (b'[{"id": "big", "title": "', b'"},\n{"id": "ok", "title": "t"}]\n'),
    "csv": (b"id,title\nbig,", b"\nok,t\n"),
}


@pytest.mark.parametrize(
    ("fmt", "stdin"), [("jsonl", False), ("jsonl", True), ("json", False), ("csv", False)]
)
def test_a_record_larger_than_memory_is_rejected_without_being_held(
    settings: Settings, factory: sessionmaker[Session], tmp_path: Path, fmt: str, stdin: bool
) -> None:
    """A sparse file: a record of 500 MB of zeros (no disk used) and a good record after it,
    ingested by a process that may map 400 MB (``/dev/zero`` as JSON Lines grew to 17.5 GB)."""
    before, after = HUGE[fmt]
    path = tmp_path / f"huge.{fmt}"
    with path.open("wb") as handle:
        handle.write(before)
        handle.seek(LINE)
        handle.write(after)
    env = {
        **os.environ,
        "RECENGINE_DATABASE_URL": settings.resolved_database_url,
        "RECENGINE_DATA_DIR": str(settings.data_dir),
    }
    args = ["ingest", "--input-format", fmt, "--no-reindex", "-" if stdin else str(path)]
    with path.open("rb") as source:
        done = subprocess.run(
            [RECENGINE, *args],
            env=env,
            stdin=source if stdin else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=300,
            preexec_fn=lambda: resource.setrlimit(
                resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE)
            ),
        )
    assert done.returncode == 1, done.stderr[-2000:]
    assert "inserted 1, " in done.stdout and "rejected 1" in done.stdout
    assert "bytes, over the limit of 2000000 (ingest.max_record_bytes)" in done.stderr
    assert list(stored(factory)) == ["ok"]


JSON_FORMS = {
    "array": lambda rs: json.dumps(rs, ensure_ascii=False, indent=2),
    "indented objects": lambda rs: "\n".join(
        json.dumps(r, ensure_ascii=False, indent=4) for r in rs
    ),
    "json lines": lambda rs: "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rs),
}


@pytest.mark.parametrize("form", sorted(JSON_FORMS))
@pytest.mark.parametrize("stdin", [False, True])
def test_a_json_file_or_standard_input_holds_an_array_or_objects(
    cli: Any, factory: sessionmaker[Session], tmp_path: Path, form: str, stdin: bool
) -> None:
    records = [record(1), record(2, title="第二篇"), record(3, tags="Spring Boot；缓存")]
    text = JSON_FORMS[form](records)
    path = tmp_path / "posts.json"
    path.write_text(text, encoding="utf-8")
    args = ["-"] if stdin else [str(path)]
    result = cli("ingest", *args, "--no-reindex", stdin=text.encode() if stdin else None)
    assert result.exit_code == 0, result.output
    name = "standard input" if stdin else str(path)
    assert result.stdout.startswith(f"{name}: read 3, inserted 3, ")
    articles = stored(factory)
    assert articles["a2"].title == "第二篇" and articles["a3"].tags == ["Spring Boot", "缓存"]


def test_a_pretty_printed_object_as_json_lines_says_one_object_per_line(
    cli: Any, factory: sessionmaker[Session], tmp_path: Path
) -> None:
    path = tmp_path / "posts.jsonl"
    text = json.dumps(record(1), indent=2)
    path.write_text(text, encoding="utf-8")
    result = cli("ingest", str(path), "--no-reindex")
    assert result.exit_code == 1 and "JSON Lines: one object per line" in result.stderr
    assert stored(factory) == {}
    piped = cli("ingest", "-", "--format", "jsonl", stdin=path.read_bytes())
    lines = len(text.splitlines())  # each a rejection of its own
    assert piped.exit_code == 1 and f"standard input: read {lines}, inserted 0" in piped.stdout
