"""``recengine feed``: its relevance floor (feed.min_score) as the help says, on both databases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from recengine.cli import main
from recengine.cli.context import CliContext
from recengine.config import Settings, load_settings
from tests.factories import javaguide_records, write_jsonl


def runner_of(settings: Settings) -> Any:
    runner = CliRunner()

    def run(*args: str) -> Any:
        result = runner.invoke(main, list(args), obj=CliContext(settings))
        assert result.exit_code == 0, result.output
        return result.output

    return run


@pytest.fixture
def reader(settings: Settings, data_dir: Path, tmp_path: Path) -> list[str]:
    """40 real articles; reader `r` read the first one. Returns the ids."""
    records = javaguide_records(data_dir, 40)
    run = runner_of(settings)
    run("db", "upgrade")
    run("ingest", str(write_jsonl(tmp_path / "a.jsonl", records)))
    run("events", "r", records[0]["id"])
    return [r["id"] for r in records]


def interest_scores(output: str) -> list[float]:
    return [i["score"] for i in json.loads(output)["items"] if "fresh" not in i["reasons"]]


def test_the_help_names_each_commands_own_floor() -> None:
    feed = CliRunner().invoke(main, ["feed", "--help"], terminal_width=200).output
    related = CliRunner().invoke(main, ["related", "--help"], terminal_width=200).output
    assert "default feed.min_score, 0 = no floor" in feed
    assert "default related.min_score, 0 = no floor" in related


@pytest.mark.usefixtures("reader")
def test_the_feed_floor_is_feed_min_score(settings: Settings) -> None:
    """Weak matches give their places to the newest articles; --min-score 0 (or the setting at
    0) shows them again."""
    run = runner_of(settings)
    floor = settings.feed.min_score
    assert floor == 0.04
    default = json.loads(run("feed", "r", "-k", "30", "--format", "json"))
    scores = interest_scores(json.dumps(default))
    assert scores and min(scores) >= floor
    assert len(default["items"]) == 30  # the rest filled with the newest articles
    assert any("fresh" in i["reasons"] for i in default["items"])

    unfloored = interest_scores(
        run("feed", "r", "-k", "30", "--format", "json", "--min-score", "0")
    )
    assert min(unfloored) < floor  # the corpus has weak matches: the floor did cut some
    assert [s for s in unfloored if s >= floor] == scores

    off = load_settings({**settings.model_dump(mode="json"), "feed": {"min_score": 0}})
    assert interest_scores(runner_of(off)("feed", "r", "-k", "30", "--format", "json")) == unfloored

    strict = interest_scores(run("feed", "r", "-k", "30", "--format", "json", "--min-score", "0.1"))
    assert strict == [s for s in scores if s >= 0.1]
