"""Start-up: `recengine --help` imports no heavy library, a command's `--help` reads no
settings, the listed one-line help is each command's own, and a reindex's pool worker loads
only what analysing text needs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from recengine.cli import main
from recengine.cli.main import COMMANDS, short_help

HEAVY = ("sqlalchemy", "numpy", "pydantic", "jieba", "rjieba", "faiss", "flask", "tqdm")

PROBE = """
import json, sys
from recengine.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


# What a spawned pool worker runs before its first task: the module of the pool's functions,
# then its initializer.
WORKER = """
import json, sys
from recengine.config import load_settings
from recengine.pipeline.reindex import pool
pool._init_worker(load_settings(), ())
print(json.dumps(sorted(sys.modules)))
"""


def loaded_modules(*args: str, env: dict[str, str] | None = None) -> tuple[str, list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=env, check=True
    )
    return done.stdout, json.loads(done.stderr.strip().splitlines()[-1])


def test_help_imports_no_heavy_library() -> None:
    out, modules = loaded_modules("--help")
    assert "ingest" in out and "reindex" in out
    assert [m for m in modules if m.split(".")[0] in HEAVY] == []
    assert not any(
        m.startswith("recengine.") and m.split(".")[1] != "cli"
        for m in modules
        if m not in ("recengine.errors",)
    )


def test_a_commands_help_reads_no_settings(tmp_path: Path) -> None:
    import os

    env = {**os.environ, "RECENGINE_CONFIG": str(tmp_path / "missing.toml")}
    out, _ = loaded_modules("duplicates", "--help", env=env)
    assert "--format" in out and "error" not in out  # though the configuration is broken
    result = CliRunner().invoke(main, ["duplicates"], env=env)
    assert result.exit_code == 2 and "missing.toml" in result.output  # still a clear error


@pytest.mark.parametrize("limit", [30, 45, 64, 120])
def test_listed_help_is_each_commands_own(limit: int) -> None:
    ctx = click.Context(main)
    fresh = type(main)(name="recengine")  # a group that has loaded no command yet
    listed = {name: short_help(fresh, ctx, name, limit) for name in COMMANDS}
    assert fresh.commands == {}
    for name in COMMANDS:
        command = main.get_command(ctx, name)
        assert command is not None
        assert listed[name] == command.get_short_help_str(limit), name
    assert sorted(main.list_commands(ctx)) == sorted(COMMANDS)


def test_a_pool_worker_loads_no_database_or_index_library() -> None:
    """Every reindex and bulk ingest starts its workers anew: SQLAlchemy and FAISS cost a
    worker ~0.3 s of its ~0.6 s start (half of it imports), and a worker never uses them."""
    done = subprocess.run([sys.executable, "-c", WORKER], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    modules = json.loads(done.stdout.strip().splitlines()[-1])
    assert "rjieba" in modules and "recengine.pipeline.featurize" in modules
    unused = ("sqlalchemy", "faiss", "scipy", "numba", "flask", "alembic")
    assert [m for m in modules if m.split(".")[0] in unused] == []
