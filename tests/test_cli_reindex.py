"""``recengine reindex`` options through click's runner (the Spark engine: tests/test_spark.py)."""

from __future__ import annotations

from click.testing import CliRunner

from recengine.cli import main
from recengine.cli.context import CliContext
from recengine.config import Settings
from tests.factories import record, write_jsonl


def invoke(settings: Settings, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), obj=CliContext(settings))
    return result.exit_code, result.output


def test_full_then_incremental_then_usage_errors(settings: Settings) -> None:
    assert invoke(settings, "db", "upgrade")[0] == 0
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    path = write_jsonl(settings.data_dir / "in.jsonl", [record(i) for i in range(6)])
    code, _ = invoke(settings, "ingest", "--no-reindex", str(path))
    assert code == 0
    code, out = invoke(settings, "reindex", "--workers", "1")
    assert code == 0 and "reindexed 6 articles: IDF model version 1" in out
    code, out = invoke(settings, "reindex", "--incremental", "--workers", "1")
    assert code == 0 and "incremental reindex: 0 changed articles recomputed" in out
    code, out = invoke(settings, "reindex", "--master", "local[1]")
    assert code == 2 and "--master and --input are for --engine spark" in out
    code, out = invoke(settings, "reindex", "--workers", "-1")
    assert code == 2
