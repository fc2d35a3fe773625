"""The command line, end to end through click's runner, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import func, select

from recengine.cli import main
from recengine.cli.context import CliContext
from recengine.config import Settings
from recengine.storage.models import Article, ArticleFeatures
from tests.factories import record, write_jsonl


@pytest.fixture
def run(settings: Settings):  # type: ignore[no-untyped-def]
    runner = CliRunner()

    def invoke(*args: str):  # type: ignore[no-untyped-def]
        return runner.invoke(main, list(args), obj=CliContext(settings))

    return invoke


def counts(settings: Settings) -> tuple[int, int]:
    ctx = CliContext(settings)
    with ctx.factory() as session:
        return (
            session.scalar(select(func.count()).select_from(Article)) or 0,
            session.scalar(select(func.count()).select_from(ArticleFeatures)) or 0,
        )


def test_upgrade_ingest_reingest(run, settings: Settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = run("db", "upgrade")
    assert result.exit_code == 0 and "upgraded: empty -> " in result.output
    assert "is current" in run("db", "upgrade").output

    path = write_jsonl(tmp_path / "a.jsonl", [record(i) for i in range(5)])
    result = run("ingest", str(path))
    assert result.exit_code == 0, result.output
    assert "read 5, inserted 5, updated 0, unchanged 0, rejected 0" in result.output
    assert "reindexed 5 articles" in result.output  # the first ingest fits the first model
    assert counts(settings) == (5, 5)

    result = run("ingest", str(path), "--json")
    assert json.loads(result.stdout)["unchanged"] == 5  # progress lines go to stderr


def test_rejections_are_listed_with_line_numbers(run, settings: Settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    run("db", "upgrade")
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(
        b'{"id": "1", "title": "ok"}\n{broken\n{"id": "3", "title": "\xff"}\n'
        b'{"id": "4", "title": "t", "published_at": "soon"}\n{"id": "5", "content": "ok"}\n'
        b'{"id": "6", "title": "nul \\u0000 inside"}\n{"id": "7", "title": "\\udc80"}\n'
    )
    result = run("ingest", str(path))
    assert result.exit_code == 1
    assert "inserted 2" in result.output and "rejected 5" in result.output
    assert "line 2: invalid JSON" in result.output
    assert "line 3: invalid UTF-8" in result.output
    assert "line 4 (id 4): published_at" in result.output
    assert "line 6 (id 6): title: must not contain NUL" in result.output
    assert "line 7: invalid JSON: unpaired UTF-16 surrogate" in result.output
    assert "Traceback" not in result.output
    assert counts(settings)[0] == 2


def test_csdn_tsv_ingests_as_is(run, settings: Settings, data_dir: Path) -> None:  # type: ignore[no-untyped-def]
    run("db", "upgrade")
    result = run("ingest", str(data_dir / "csdn-blog-100" / "csdn_blog_100.tsv"))
    assert result.exit_code == 0, result.output
    assert "inserted 100" in result.output
    assert counts(settings) == (100, 100)


def test_ingest_before_upgrade_says_what_to_do(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = write_jsonl(tmp_path / "a.jsonl", [record(1)])
    result = run("ingest", str(path))
    assert result.exit_code == 2
    assert "recengine db upgrade" in result.output and "Traceback" not in result.output


def test_unreadable_inputs_fail_cleanly(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    run("db", "upgrade")
    result = run("ingest", str(tmp_path / "missing.jsonl"))
    assert result.exit_code == 2 and "does not exist" in result.output
    odd = tmp_path / "a.xml"
    odd.write_text("<a/>")
    result = run("ingest", str(odd))
    assert result.exit_code == 2 and "extension" in result.output


def test_bad_setting_is_reported_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECENGINE_FEATURES__HAMMING_K", "-1")
    result = CliRunner().invoke(main, ["db", "upgrade"])
    assert result.exit_code == 2
    assert "features.hamming_k" in result.output and "Traceback" not in result.output
