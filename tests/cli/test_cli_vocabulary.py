"""One vocabulary on the command line: errors name the options typed (not HTTP's fields), a
cursor is --cursor and a date --after, --format json is one JSON document everywhere, and feeds
page with --offset as related lists do. Old spellings keep working for scripts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from recengine.cli import main
from recengine.cli.context import CliContext
from recengine.config import Settings, load_settings
from tests.factories import javaguide_records, record, write_jsonl


def runner_of(settings: Settings) -> Any:
    runner = CliRunner()

    def invoke(*args: str) -> Any:
        return runner.invoke(main, list(args), obj=CliContext(settings))

    return invoke


@pytest.fixture
def run(settings: Settings) -> Any:
    return runner_of(settings)


@pytest.fixture
def stored(run: Any, tmp_path: Path) -> list[str]:
    """Six articles, each with a copy (six clusters), and a model; returns the originals' ids."""
    assert run("db", "upgrade").exit_code == 0
    records = [record(i, title=f"第 {i} 篇") for i in range(6)]
    copies = [{**r, "id": f"copy-{r['id']}"} for r in records]
    result = run("ingest", str(write_jsonl(tmp_path / "a.jsonl", records + copies)))
    assert result.exit_code == 0, result.output
    return [r["id"] for r in records]


def _many(option: str, n: int = 3) -> list[str]:
    return [part for i in range(n) for part in (option, f"v{i}")]


BAD_LISTS = [
    (["related", "a0", "--after", "soon"], "Invalid value for '--after': 'soon' is not a time"),
    (["feed", "u", "--before", "2024-13-01"], "Invalid value for '--before': '2024-13-01'"),
    (
        ["related", "a0", "--after", "2025-01-01", "--before", "2024-01-01"],
        "--after must be earlier than --before",
    ),
    (["related", "a0", "-k", "0"], "Invalid value for '-k': must be an integer from 1 to 100"),
    (["feed", "u", "-k", "101"], "Invalid value for '-k': must be an integer from 1 to 100"),
    (["related", "a0", "--offset", "1001"], "Invalid value for '--offset': must be an integer"),
    (["feed", "u", "--offset", "1001"], "Invalid value for '--offset': must be an integer"),
    (["related", "a0", *_many("--category")], "Invalid value for '--category': at most 2 values"),
    (["feed", "u", *_many("--tag")], "Invalid value for '--tag': at most 2 values"),
    (["feed", "u", *_many("--exclude")], "Invalid value for '--exclude': at most 2 values"),
    (["events", "u", "a0", "--at", "9999-12-31"], "Invalid value for '--at': year 9999"),
]


@pytest.mark.usefixtures("stored")
def test_errors_name_the_options_typed(settings: Settings) -> None:
    run = runner_of(
        load_settings({**settings.model_dump(mode="json"), "related": {"max_filter_values": 2}})
    )
    for args, says in BAD_LISTS:
        result = run(*args)
        assert result.exit_code == 2, (args, result.output)
        assert says in result.output, (args, result.output)
        for field in ("published_after", "published_before", "categories", "offset must", "k must"):
            assert field not in result.output, (args, result.output)


@pytest.mark.usefixtures("stored")
def test_override_list_pages_with_cursor_and_after_still_works(run: Any) -> None:
    for article in ("a0", "a1", "a2"):
        assert run("override", "add", "exclude", article, "--by", "ed").exit_code == 0
    first = json.loads(run("override", "list", "--limit", "2").output)
    assert [o["article"] for o in first["overrides"]] == ["a0", "a1"]
    rest = json.loads(run("override", "list", "--cursor", str(first["next_after"])).output)
    assert [o["article"] for o in rest["overrides"]] == ["a2"]
    old = json.loads(run("override", "list", "--after", str(first["next_after"])).output)
    assert old == rest  # the former spelling, for scripts
    shown = run("override", "list", "--help").output
    assert "--cursor" in shown and "--after" not in shown


@pytest.mark.usefixtures("stored")
def test_duplicates_json_is_one_document_and_jsonl_lines(run: Any) -> None:
    lines = run("duplicates", "--format", "jsonl")
    clusters = [json.loads(line) for line in lines.output.splitlines()]
    assert len(clusters) == 6
    document = run("duplicates", "--format", "json")
    assert document.exit_code == 0 and json.loads(document.output) == {"clusters": clusters}
    one = json.loads(run("duplicates", "--id", "a0", "--format", "json").output)
    assert one["article"] == "a0" and one["duplicates"][0]["id"] == "copy-a0"


def test_duplicates_json_of_no_clusters_is_valid(run: Any, tmp_path: Path) -> None:
    assert run("db", "upgrade").exit_code == 0
    path = write_jsonl(tmp_path / "a.jsonl", [record(1), record(2, content="<p>另一篇文章</p>")])
    assert run("ingest", str(path)).exit_code == 0
    assert json.loads(run("duplicates", "--format", "json").output) == {"clusters": []}


def test_ingest_prints_json_with_format_json_and_keeps_its_old_spellings(
    run: Any, tmp_path: Path
) -> None:
    assert run("db", "upgrade").exit_code == 0
    path = write_jsonl(tmp_path / "a.jsonl", [record(i) for i in range(3)])
    first = run("ingest", str(path), "--format", "json")
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout.splitlines()[0])["inserted"] == 3
    assert json.loads(run("ingest", str(path), "--json").stdout)["unchanged"] == 3
    legacy = run("ingest", str(path), "--format", "jsonl")  # the input format, as before
    assert legacy.exit_code == 0 and "read 3, inserted 0, updated 0, unchanged 3" in legacy.output
    odd = tmp_path / "records.txt"
    odd.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    named = run("ingest", str(odd), "--input-format", "jsonl", "--format", "json")
    assert named.exit_code == 0 and json.loads(named.stdout)["unchanged"] == 3
    clash = run("ingest", str(odd), "--input-format", "csv", "--format", "jsonl")
    assert clash.exit_code == 2 and "disagree" in clash.output
    shown = run("ingest", "--help").output
    assert "--input-format [jsonl|json|csv|tsv]" in shown and "--format [text|json]" in shown
    assert "--json" not in shown


def test_feed_pages_with_offset(run: Any, data_dir: Path, tmp_path: Path) -> None:
    records = javaguide_records(data_dir, 40)
    assert run("db", "upgrade").exit_code == 0
    assert run("ingest", str(write_jsonl(tmp_path / "a.jsonl", records))).exit_code == 0
    assert run("events", "r", records[0]["id"], records[1]["id"]).exit_code == 0
    for reader in ("r", "nobody"):  # interests, and the newest articles alone
        whole = json.loads(run("feed", reader, "-k", "12", "--format", "json").output)
        page = json.loads(
            run("feed", reader, "-k", "7", "--offset", "5", "--format", "json").output
        )
        assert [i["id"] for i in page["items"]] == [i["id"] for i in whole["items"][5:12]]
        assert page["items"] == whole["items"][5:12]
