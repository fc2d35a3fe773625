"""``recengine reindex`` options through click's runner (the Spark engine:
tests/reindex/test_spark.py)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from recengine.cli import main
from recengine.cli.context import CliContext
from recengine.config import Settings
from tests.factories import javaguide_records, record, write_jsonl


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


def test_the_first_ingest_tokenizes_each_article_once(settings: Settings, data_dir: Path) -> None:
    """`recengine ingest` into an empty database fits the first model itself: the ingest
    writes the articles without tokenizing them (there is no model to use the counts), and
    the reindex that follows tokenizes each article exactly once."""
    one = settings.model_copy(
        update={"reindex": settings.reindex.model_copy(update={"workers": 1})}
    )
    ctx = CliContext(one)
    cut = ctx.featurizer.tokenizer.cut  # one call per text (the backend's: per segment)
    calls: list[str] = []

    def counting(text: str) -> list[str]:
        calls.append(text)
        return cut(text)

    ctx.featurizer.tokenizer.cut = counting  # type: ignore[method-assign]
    records = javaguide_records(data_dir, 40)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    path = write_jsonl(settings.data_dir / "a.jsonl", records)
    assert CliRunner().invoke(main, ["db", "upgrade"], obj=ctx).exit_code == 0
    result = CliRunner().invoke(main, ["ingest", str(path)], obj=ctx)
    assert result.exit_code == 0, result.output
    assert "reindexed 40 articles" in result.output
    assert len(calls) == 40 and len(set(calls)) == 40
