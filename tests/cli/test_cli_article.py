"""``recengine article show|list|delete``: the bodies and rules of ``GET|DELETE
/api/v1/articles/<id>`` and ``GET /api/v1/articles?after=&limit=``, on both databases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from recengine.cli import main
from recengine.cli.context import CliContext
from recengine.config import Settings
from recengine.text.words.tokenize import Tokenizer
from recengine.web import create_app
from tests.factories import record, write_jsonl


def test_article_commands_answer_as_the_http_api(
    settings: Settings, tmp_path: Path, tokenizer: Tokenizer
) -> None:
    runner = CliRunner()

    def run(*args: str) -> Any:
        return runner.invoke(main, list(args), obj=CliContext(settings))

    assert run("db", "upgrade").exit_code == 0
    records = [record(i, title=f"第 {i} 篇", url=f"https://x.example/{i}") for i in range(5)]
    records[1].update(image="/up/1.png", summary="一句摘要。")
    records.append({**records[0], "id": "copy-a0"})  # a near-duplicate of a0, which is canonical
    assert run("ingest", str(write_jsonl(tmp_path / "a.jsonl", records))).exit_code == 0
    http = create_app(settings, tokenizer=tokenizer).test_client()

    shown = run("article", "show", "a1", "--format", "json")
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.output) == http.get("/api/v1/articles/a1").get_json()
    assert json.loads(shown.output)["published_at"] == "2024-05-01T00:00:00Z"
    text = run("article", "show", "a1").output
    assert "title:        第 1 篇" in text and "关于数据库索引与查询优化的文章 1" in text
    assert "image:        /up/1.png" in text and "summary:      一句摘要。" in text
    assert json.loads(shown.output)["image"] == "/up/1.png"

    pages, cursor = [], 0
    while True:
        page = json.loads(
            run(
                "article", "list", "--limit", "2", "--cursor", str(cursor), "--format", "json"
            ).output
        )
        assert page == http.get(f"/api/v1/articles?limit=2&after={cursor}").get_json()
        pages.append([a["id"] for a in page["articles"]])
        if page["next_after"] is None:
            break
        cursor = page["next_after"]
    assert pages == [["a0", "a1"], ["a2", "a3"], ["a4", "copy-a0"], []]
    listing = run("article", "list", "--limit", "4")
    assert (
        listing.output.splitlines()[0] == "a0  第 0 篇"
        and "more: recengine article list --cursor" in listing.output
    )

    deleted = run("article", "delete", "a0", "--format", "json")
    assert deleted.exit_code == 0, deleted.output
    assert json.loads(deleted.output) == {"id": "a0", "deleted": True}
    for args in (["article", "show", "a0"], ["article", "delete", "a0"]):
        gone = run(*args)
        assert gone.exit_code == 2 and "no article with id 'a0'" in gone.output
    assert http.get("/api/v1/articles/a0").status_code == 404
    rest = json.loads(run("article", "list", "--format", "json").output)
    assert [a["id"] for a in rest["articles"]] == ["a1", "a2", "a3", "a4", "copy-a0"]
    assert rest["next_after"] is None
    # its cluster was updated in the same transaction: the copy stands alone
    assert run("duplicates", "--format", "jsonl").output == ""

    for bad in (["--limit", "0"], ["--limit", "1001"], ["--cursor", "-1"], ["--cursor", "\u0663"]):
        result = run("article", "list", *bad)
        assert result.exit_code == 2 and "Invalid value for" in result.output, bad
    for query in ("limit=0", "limit=1001", "after=-1", "after=x", "cursor=1"):
        assert http.get(f"/api/v1/articles?{query}").status_code == 422, query
    spec = http.get("/openapi.json").get_json()["paths"]["/api/v1/articles"]
    assert {p["name"] for p in spec["get"]["parameters"]} == {"after", "limit"}
