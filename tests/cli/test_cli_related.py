"""``recengine related``: the HTTP body as JSON, a readable listing, clear errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner
from sqlalchemy.orm import Session, sessionmaker

from recengine.cli import main
from recengine.cli.context import CliContext
from recengine.config import Settings
from tests.factories import javaguide_records, write_jsonl
from tests.recommend.test_related import live_related, repost


def test_related_command(settings: Settings, data_dir: Path, tmp_path: Path) -> None:
    runner = CliRunner()

    def run(*args: str):  # type: ignore[no-untyped-def]
        return runner.invoke(main, list(args), obj=CliContext(settings))

    records = javaguide_records(data_dir, 30)
    records.append(repost(records[0], 1))
    assert run("db", "upgrade").exit_code == 0
    assert run("ingest", str(write_jsonl(tmp_path / "a.jsonl", records))).exit_code == 0

    aid = records[0]["id"]
    result = run("related", aid, "-k", "4", "--format", "json")
    assert result.exit_code == 0, result.output
    body = json.loads(result.output)
    factory: sessionmaker[Session] = CliContext(settings).factory
    with factory() as session:
        service = live_related(settings, factory)
        assert body == service.related(aid, session=session, k=4)
    assert len(body["items"]) == 4 and body["suppressed"][0]["id"] == f"repost-1-{aid}"

    text = run("related", aid, "-k", "2")
    assert text.exit_code == 0
    assert body["items"][0]["id"] in text.output and "suppressed near-duplicates" in text.output
    cut = body["suppressed"][0]  # the rule that matched, in words
    assert f"(resemblance {cut['score']:.4f}, distance {cut['distance']})" in text.output

    only = run("related", aid, "--category", records[3]["category"], "--format", "json")
    categories = {r["id"]: r["category"] for r in records}
    assert {categories[e["id"]] for e in json.loads(only.output)["items"]} == {
        records[3]["category"]
    }

    missing = run("related", "nope")
    assert missing.exit_code == 2 and "no article with id 'nope'" in missing.output
    bad = run("related", aid, "-k", "0")
    assert bad.exit_code == 2 and "Invalid value for '-k': must be an integer" in bad.output


def test_two_processes_share_one_build(settings: Settings, data_dir: Path, tmp_path: Path) -> None:
    """Two `recengine related` processes at once: one builds and saves, both answer the same."""
    runner = CliRunner()
    records = javaguide_records(data_dir, 25)
    obj = CliContext(settings)
    assert runner.invoke(main, ["db", "upgrade"], obj=obj).exit_code == 0
    path = write_jsonl(tmp_path / "a.jsonl", records)
    assert runner.invoke(main, ["ingest", str(path)], obj=CliContext(settings)).exit_code == 0
    folder = settings.data_dir / "index" / "related"
    for old in folder.glob("*.idx"):
        old.unlink()
    env = {
        **os.environ,
        "RECENGINE_DATABASE_URL": settings.resolved_database_url,
        "RECENGINE_DATA_DIR": str(settings.data_dir),
    }
    command = [sys.executable, "-c", "from recengine.cli import main; main()", "related"]
    procs = [
        subprocess.Popen(
            [*command, records[i]["id"], "--format", "json"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for i in (0, 0, 7)
    ]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outputs]
    first, second, third = (json.loads(o[0]) for o in outputs)
    assert first == second and first["items"] and third["article"] == records[7]["id"]
    assert len(list(folder.glob("*.idx"))) == 1
