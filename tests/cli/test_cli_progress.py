"""Long commands are never silent, and never draw a broken bar: tqdm bars on a terminal (a line
for a phase with nothing to count), plain lines in a pipe or a CI log and on a terminal that
reports no size. Real processes on real pseudo-terminals."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from click.testing import CliRunner

from recengine.cli.progress import PhaseProgress
from recengine.config import Settings
from tests.factories import javaguide_records, write_jsonl

ROOT = Path(__file__).resolve().parents[2]
RECENGINE = str(Path(sys.executable).with_name("recengine"))


def env_of(settings: Settings) -> dict[str, str]:
    return {
        **os.environ,
        "RECENGINE_DATABASE_URL": settings.resolved_database_url,
        "RECENGINE_DATA_DIR": str(settings.data_dir),
    }


@pytest.fixture
def corpus(settings: Settings, data_dir: Path, tmp_path: Path) -> Path:
    """A migrated database and a file of 30 real articles, not ingested yet."""
    done = subprocess.run(
        [RECENGINE, "db", "upgrade"], env=env_of(settings), capture_output=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return write_jsonl(tmp_path / "a.jsonl", javaguide_records(data_dir, 30))


def on_terminal(args: list[str], env: dict[str, str], rows: int, cols: int) -> str:
    """What ``args`` writes to a pseudo-terminal of ``rows`` x ``cols`` (both outputs)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    proc = subprocess.Popen(args, stdin=slave, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    out = b""
    while True:
        ready, _, _ = select.select([master], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the terminal's last writer has gone
                break
            if not chunk:
                break
            out += chunk
        elif proc.poll() is not None:
            break
    os.close(master)
    assert proc.wait(timeout=120) == 0, out.decode(errors="replace")
    return out.decode("utf-8", errors="replace")


def test_in_a_pipe_every_phase_is_a_plain_line(settings: Settings, corpus: Path) -> None:
    done = subprocess.run(
        [RECENGINE, "ingest", str(corpus)],
        env=env_of(settings),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    for expected in (
        "ingest: records ...",
        "reindex: tokenize 30 articles ...",
        "reindex: catch-up ...",
        "reindex: clusters ...",
    ):
        assert expected in lines, done.stderr
    assert any(line.startswith("ingest: records done: 30 records in ") for line in lines)
    assert any(line.startswith("reindex: tokenize done: 30 articles in ") for line in lines)
    assert "\r" not in done.stderr and "\x1b" not in done.stderr and "doc/s" not in done.stderr
    assert all(line.strip() for line in lines)
    assert done.stdout.splitlines()[0].endswith("rejected 0")  # stdout: the summaries only
    assert "reindexed 30 articles" in done.stdout and "reindex:" not in done.stdout


def test_a_terminal_without_a_size_gets_lines_not_blank_ones(
    settings: Settings, corpus: Path
) -> None:
    out = on_terminal([RECENGINE, "ingest", str(corpus)], env_of(settings), 0, 0)
    lines = out.replace("\r\n", "\n").split("\n")[:-1]
    assert "reindex: tokenize 30 articles ..." in lines and "ingest: records ..." in lines
    assert all(line.strip() for line in lines), out  # tqdm drew empty lines here
    assert "\r" not in out.replace("\r\n", "")


def test_on_a_terminal_bars_for_counts_and_lines_for_the_rest(
    settings: Settings, corpus: Path
) -> None:
    env = env_of(settings)
    on_terminal([RECENGINE, "ingest", "--no-reindex", str(corpus)], env, 24, 100)
    out = on_terminal([RECENGINE, "reindex"], env, 24, 100)
    assert "reindex: tokenize: 100%|" in out and "30/30" in out  # a bar with its size
    for phase in ("catch-up", "clusters", "switch"):
        assert f"reindex: {phase} ...\r\n" in out
    assert "?doc/s" not in out and "0doc" not in out and "[00:00, ?" not in out


def test_a_counting_phase_says_where_it_is_between_start_and_end() -> None:
    runner = CliRunner()
    with runner.isolation() as (_, err, *_):
        progress = PhaseProgress("ingest", "records", bars=False, interval=0.0)
        progress.start("records", None)
        progress.update(10)
        progress.update(5)
        progress.start("write", 40)
        progress.update(40)
        progress.close()
        progress.close()  # twice: nothing more
    lines = err.getvalue().decode().splitlines()
    assert lines[0] == "ingest: records ..."
    assert lines[1].startswith("ingest: records: 10 records (") and lines[2].startswith(
        "ingest: records: 15 records ("
    )
    assert lines[3].startswith("ingest: records done: 15 records in ")
    assert lines[4] == "ingest: write 40 records ..."
    assert lines[5].startswith("ingest: write: 40 of 40 records (")
    assert lines[6].startswith("ingest: write done: 40 records in ") and len(lines) == 7


def test_scripts_test_says_what_it_installs_before_the_long_install(tmp_path: Path) -> None:
    """A virtualenv whose pip stops the script: what was printed before the install started."""
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    python = venv / "python"
    python.write_text("#!/bin/sh\necho 'the install would start here' >&2\nexit 3\n")
    python.chmod(0o755)
    done = subprocess.run(
        [str(ROOT / "scripts" / "test")],
        env={**os.environ, "RECENGINE_VENV": str(tmp_path / "venv")},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 3
    said, _, after = done.stderr.partition("the install would start here")
    assert "scripts/test: installing recengine and the test dependencies" in said, done.stderr
    assert "a few minutes" in said and after.strip() == ""
