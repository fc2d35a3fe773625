"""The command line's errors: what a person typed gets a message in their words and exit 2;
an internal error's hint (--debug) works as it reads."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import func, select

from recengine.cli import main
from recengine.cli.context import CliContext
from recengine.config import Settings, load_settings
from recengine.storage.models import Article, Override, ReaderEvent
from tests.factories import record, write_jsonl


@pytest.fixture
def run(settings: Settings) -> Any:
    runner = CliRunner()

    def invoke(*args: str) -> Any:
        return runner.invoke(main, list(args), obj=CliContext(settings))

    return invoke


def test_debug_is_taken_after_the_subcommand_as_the_hint_says(
    run: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import recengine.storage.migrate as migrate

    def broken(*_: Any, **__: Any) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(migrate, "current_revision", broken)
    plain = run("db", "upgrade")
    assert plain.exit_code == 70
    assert "internal error: RuntimeError: boom" in plain.output
    assert "run again with --debug" in plain.output
    for args in (
        ["db", "upgrade", "--debug"],
        ["db", "--debug", "upgrade"],
        ["--debug", "db", "upgrade"],
    ):
        again = run(*args)
        assert "No such option" not in again.output, args
        assert isinstance(again.exception, RuntimeError), args  # the traceback, not the hint


@pytest.fixture
def stored(run: Any, tmp_path: Path) -> list[str]:
    """Six articles with a model, two overrides (ids 1, 2) and one read; returns the ids."""
    assert run("db", "upgrade").exit_code == 0
    records = [record(i, title=f"第 {i} 篇 数据库") for i in range(6)]
    assert run("ingest", str(write_jsonl(tmp_path / "a.jsonl", records))).exit_code == 0
    assert run("override", "add", "block", "a0", "a1", "--by", "ed").exit_code == 0
    assert run("override", "add", "exclude", "a2", "--by", "ed").exit_code == 0
    assert run("events", "u", "a3").exit_code == 0
    return [r["id"] for r in records]


def state(settings: Settings) -> tuple[int, int, int]:
    """(articles, overrides, reader events): what a refused command must leave as it was."""
    with CliContext(settings).factory() as session:
        return tuple(  # type: ignore[return-value]
            session.scalar(select(func.count()).select_from(model)) or 0
            for model in (Article, Override, ReaderEvent)
        )


BAD = "x\udcff"  # the bytes b"x\xff" as Python hands them to a program (surrogateescape)
NOT_UTF8 = [
    ["related", BAD],
    ["related", "a0", "--exclude", BAD],
    ["related", "a0", "--category", BAD],
    ["related", "a0", "--tag", BAD],
    ["related", "a0", "--after", BAD],
    ["duplicates", "--id", BAD],
    ["events", BAD, "a0"],
    ["events", "u", BAD],
    ["events", "u", "a0", "--at", BAD],
    ["feed", BAD],
    ["feed", "u", "--before", BAD],
    ["override", "add", "block", BAD, "a1"],
    ["override", "add", "exclude", "a4", "--reason", BAD],
    ["override", "add", "exclude", "a4", "--by", BAD],
    ["override", "add", BAD, "a4"],
    ["override", "list", "--article", BAD],
    ["override", "list", "--kind", BAD],
]


@pytest.mark.usefixtures("stored")
def test_arguments_that_are_not_utf8_are_refused_by_name(run: Any, settings: Settings) -> None:
    before = state(settings)
    for args in NOT_UTF8:
        result = run(*args)
        assert result.exit_code == 2, (args, result.output)
        assert "'x\\xff' is not valid UTF-8" in result.output, (args, result.output)
        assert "Invalid value for" in result.output and "internal error" not in result.output
    assert state(settings) == before


@pytest.mark.usefixtures("stored")
def test_a_real_process_given_bytes_that_are_not_utf8(settings: Settings) -> None:
    env = {
        **os.environ,
        "RECENGINE_DATABASE_URL": settings.resolved_database_url,
        "RECENGINE_DATA_DIR": str(settings.data_dir),
    }
    recengine = str(Path(sys.executable).with_name("recengine"))
    done = subprocess.run(
        [recengine, "events", b"reader\xff", "a0"], capture_output=True, env=env, check=False
    )
    assert done.returncode == 2, done.stderr
    assert b"Invalid value for 'USER': 'reader\\xff' is not valid UTF-8" in done.stderr


ARABIC_THREE = "\u0663"  # ٣
ARABIC_SECONDS = "".join(chr(0x0660 + int(d)) for d in "1714550400")
NOT_ASCII_NUMBERS = [
    ["related", "a0", "-k", ARABIC_THREE],
    ["related", "a0", "--offset", ARABIC_THREE],
    ["related", "a0", "--min-score", "\u0660.\u0665"],
    ["related", "a0", "--after", ARABIC_SECONDS],
    ["feed", "u", "-k", ARABIC_THREE],
    ["feed", "u", "--before", ARABIC_SECONDS],
    ["events", "u", "a4", "--at", ARABIC_SECONDS],
    ["override", "remove", ARABIC_THREE],
    ["override", "remove", "\u0661"],
    ["override", "list", "--limit", ARABIC_THREE],
    ["override", "add", "pin", "a0", "a4", "--position", ARABIC_THREE],
    ["report", "--days", ARABIC_THREE],
    ["reindex", "--workers", "\u0661"],
    ["serve", "--port", "\u0668\u0660\u0660\u0660"],
    ["demo", "--limit", ARABIC_THREE],
    ["related", "a0", "-k", "1_0"],
    ["related", "a0", "--min-score", "nan"],
]


@pytest.mark.usefixtures("stored")
def test_numbers_are_ascii_digits_only(run: Any, settings: Settings) -> None:
    before = state(settings)
    for args in NOT_ASCII_NUMBERS:
        result = run(*args)
        assert result.exit_code == 2, (args, result.output)
        assert "Invalid value for" in result.output or "is not a time" in result.output, args
    assert state(settings) == before  # override 1 was not removed by "١"
    assert run("override", "remove", "1").exit_code == 0  # ASCII still works


@pytest.mark.usefixtures("stored")
def test_an_override_id_beyond_bigint_is_refused(run: Any, settings: Settings) -> None:
    before = state(settings)
    for args in (["override", "remove", str(2**63)], ["override", "list", "--after", str(2**64)]):
        result = run(*args)
        assert result.exit_code == 2 and "is not in the range" in result.output, result.output
    largest = run("override", "remove", str(2**63 - 1))
    assert largest.exit_code == 2 and "internal error" not in largest.output, largest.output
    assert state(settings) == before


@pytest.mark.parametrize(
    "args", [["duplicates"], ["related", "a0"], ["db", "upgrade"], ["feed", "u"], ["report"]]
)
def test_a_file_that_is_not_a_database(tmp_path: Path, args: list[str]) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("these are notes, not a database\n" * 10, encoding="utf-8")
    settings = load_settings({"data_dir": str(tmp_path / "d"), "database_url": f"sqlite:///{path}"})
    result = CliRunner().invoke(main, args, obj=CliContext(settings))
    assert result.exit_code == 2, result.output
    assert f"cannot use the database sqlite:///{path}: file is not a database" in result.output
    assert path.read_text(encoding="utf-8") == "these are notes, not a database\n" * 10
