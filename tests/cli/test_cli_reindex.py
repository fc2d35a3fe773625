"""``recengine reindex`` options through click's runner (the Spark engine:
tests/reindex/test_spark.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from recengine.cli import main
from recengine.cli.context import CliContext
from recengine.config import Settings
from recengine.pipeline.featurize import model_params
from recengine.pipeline.reindex.job import JobDir, JobRecord
from recengine.pipeline.reindex.versions import database_name
from recengine.storage.db import make_engine, make_session_factory
from recengine.storage.state import read_state
from tests.conftest import make_settings
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


def _active_version(settings: Settings) -> int | None:
    engine = make_engine(settings.resolved_database_url)
    try:
        with make_session_factory(engine)() as session:
            return read_state(session=session).active_model_version
    finally:
        engine.dispose()


def _first_ingest(settings: Settings) -> Path:
    """``db upgrade`` and a first ``ingest`` of 6 records (which fits model version 1)."""
    assert invoke(settings, "db", "upgrade")[0] == 0
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    path = write_jsonl(settings.data_dir / "in.jsonl", [record(i) for i in range(6)])
    code, out = invoke(settings, "ingest", str(path))
    assert code == 0 and "reindexed 6 articles: IDF model version 1" in out, out
    return path


def test_a_reindex_right_after_the_first_ingest_does_nothing(settings: Settings) -> None:
    """README's sequence (ingest, reindex): the first ingest fitted the model on every stored
    article, so the reindex that follows has nothing to rebuild. It says so and why, exits 0,
    and tokenizes no text; --force still rebuilds."""
    _first_ingest(settings)
    ctx = CliContext(settings)
    calls: list[str] = []
    cut = ctx.featurizer.tokenizer.cut

    def counting(text: str) -> list[str]:
        calls.append(text)
        return cut(text)

    ctx.featurizer.tokenizer.cut = counting  # type: ignore[method-assign]
    result = CliRunner().invoke(main, ["reindex", "--workers", "1"], obj=ctx)
    assert result.exit_code == 0, result.output
    assert "up to date, nothing done: IDF model version 1 was fitted at change" in result.output
    assert "no article has changed since" in result.output and "--force" in result.output
    assert calls == [] and _active_version(settings) == 1
    code, out = invoke(settings, "reindex", "--workers", "1", "--force")
    assert code == 0 and "reindexed 6 articles: IDF model version 2" in out, out
    assert _active_version(settings) == 2
    code, out = invoke(settings, "reindex", "--workers", "1")  # forced ones record it too
    assert code == 0 and "up to date, nothing done: IDF model version 2" in out, out
    code, out = invoke(settings, "reindex", "--force", "--incremental")
    assert code == 2 and "--force is for a full reindex" in out


def test_a_reindex_after_a_change_of_an_article_runs_and_says_why(settings: Settings) -> None:
    path = _first_ingest(settings)
    extra = write_jsonl(settings.data_dir / "more.jsonl", [record(6)])
    assert invoke(settings, "ingest", str(extra))[0] == 0
    code, out = invoke(settings, "reindex", "--workers", "1")
    assert code == 0 and "reindexed 7 articles: IDF model version 2" in out, out
    assert "(1 article changed since the fit at change" in out
    edited = write_jsonl(path, [record(0, content="<p>改写过的正文，讲缓存</p>")])
    assert invoke(settings, "ingest", str(edited))[0] == 0
    code, out = invoke(settings, "reindex", "--workers", "1")
    assert code == 0 and "IDF model version 3" in out and "1 article changed" in out, out
    assert invoke(settings, "article", "delete", "a1")[0] == 0
    code, out = invoke(settings, "reindex", "--workers", "1")
    assert code == 0 and "reindexed 6 articles: IDF model version 4" in out, out
    code, out = invoke(settings, "reindex", "--workers", "1")
    assert code == 0 and "up to date" in out and _active_version(settings) == 4


@pytest.mark.parametrize(
    ("override", "named"),
    [
        pytest.param(
            {"features": {"title_weight": 2}}, "features.title_weight None -> 2", id="title_weight"
        ),
        pytest.param(
            {"tokenizer": {"min_cjk_chars": 3}},
            "tokenizer.min_cjk_chars 2 -> 3",
            id="min_cjk_chars",
        ),
        pytest.param(
            {"neardup": {"min_resemblance": 0.5}},
            "neardup.min_resemblance 0.45 -> 0.5",
            id="min_resemblance",
        ),
        pytest.param({"features": {"hamming_k": 4}}, "neardup.hamming_k 3 -> 4", id="hamming_k"),
        pytest.param({"dense": {"dims": 32}}, "dense.dims 64 -> 32", id="dense_dims"),
    ],
)
def test_a_reindex_after_a_change_of_a_setting_of_the_model_runs(
    settings: Settings,
    tmp_path: Path,
    database_url: str,
    override: dict[str, Any],
    named: str,
) -> None:
    """A setting that the model, its vectors, its clusters or its dense part depend on
    makes the next reindex run (and say which); one that only serving reads does not."""
    _first_ingest(settings)
    served = make_settings(tmp_path, database_url, related={"min_score": 0.1})
    code, out = invoke(served, "reindex", "--workers", "1")
    assert code == 0 and "up to date" in out, out
    changed = make_settings(tmp_path, database_url, **override)
    code, out = invoke(changed, "reindex", "--workers", "1")
    assert code == 0 and "IDF model version 2" in out and named in out, out
    code, out = invoke(changed, "reindex", "--workers", "1")
    assert code == 0 and "up to date" in out, out


def test_a_changed_user_dictionary_file_makes_the_reindex_run(
    tmp_path: Path, database_url: str
) -> None:
    """The settings name the file; what it holds is what the tokenizer cuts with."""
    words = tmp_path / "words.txt"
    words.write_text("查询优化 10 n\n", encoding="utf-8")
    settings = make_settings(tmp_path, database_url, tokenizer={"user_dict": str(words)})
    _first_ingest(settings)
    assert "up to date" in invoke(settings, "reindex", "--workers", "1")[1]
    words.write_text("查询优化 10 n\n数据库索引 10 n\n", encoding="utf-8")
    code, out = invoke(settings, "reindex", "--workers", "1")
    assert code == 0 and "IDF model version 2" in out and "files.user_dict" in out, out


def test_an_unfinished_reindex_is_finished_even_when_the_model_is_current(
    settings: Settings,
) -> None:
    """A job left by an interrupted reindex (its spool, the rows of its version) is resumed
    or cleared by the next reindex, as before: the up-to-date check never strands one."""
    _first_ingest(settings)
    engine = make_engine(settings.resolved_database_url)
    try:
        factory = make_session_factory(engine)
        job = JobRecord(
            database=database_name(factory),
            params=model_params(settings),
            start_seq=0,
            started_at="2026-01-01T00:00:00+00:00",
        )
    finally:
        engine.dispose()
    jobs = JobDir(settings.data_dir)
    jobs.save(job)
    code, out = invoke(settings, "reindex", "--workers", "1")
    assert code == 0 and "IDF model version 2" in out, out
    assert "(an unfinished reindex was there)" in out and jobs.load() is None
