"""Before the first model (``ingest --no-reindex``) ``duplicates`` says so, as ``related`` does,
instead of an empty list that reads as "no duplicates"; after ``reindex`` it lists them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from recengine.cli import main
from recengine.cli.context import CliContext
from recengine.config import Settings
from tests.factories import record, write_jsonl


def test_duplicates_before_the_first_model(settings: Settings, tmp_path: Path) -> None:
    runner = CliRunner()

    def run(*args: str) -> Any:
        return runner.invoke(main, list(args), obj=CliContext(settings))

    assert run("db", "upgrade").exit_code == 0
    records = [record(1), {**record(1), "id": "copy"}]
    path = write_jsonl(tmp_path / "a.jsonl", records)
    assert run("ingest", "--no-reindex", str(path)).exit_code == 0
    for args in (
        ["duplicates"],
        ["duplicates", "--format", "jsonl"],
        ["duplicates", "--format", "json"],
        ["duplicates", "--id", "a1"],
        ["related", "a1"],
    ):
        result = run(*args)
        assert result.exit_code == 2, (args, result.output)
        assert "run `recengine reindex`" in result.output, (args, result.output)
    assert "no article with id 'nope'" in run("duplicates", "--id", "nope").output
    assert run("reindex").exit_code == 0
    lines = run("duplicates", "--format", "jsonl").output.splitlines()
    assert [json.loads(line)["canonical"] for line in lines] == ["a1"]
