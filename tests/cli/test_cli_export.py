"""``recengine export related``: one file per list for static-site generators, incremental by
the change sequence, on both databases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from recengine.cli import main
from recengine.cli.context import CliContext
from recengine.config import Settings
from recengine.recommend.export import MANIFEST, file_name
from tests.factories import javaguide_records, write_jsonl
from tests.recommend.test_fragment import HOSTILE, parsed


def runner(settings: Settings) -> Any:
    cli = CliRunner()

    def run(*args: str) -> Result:
        return cli.invoke(main, list(args), obj=CliContext(settings))

    return run


def files(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in folder.iterdir()}


def test_export_writes_each_list_once_then_only_what_changed(
    settings: Settings, data_dir: Path, tmp_path: Path
) -> None:
    run = runner(settings)
    records = javaguide_records(data_dir, 30)
    for r in records:
        r["url"] = f"/p/{r['id']}"
    assert run("db", "upgrade").exit_code == 0
    assert run("ingest", str(write_jsonl(tmp_path / "a.jsonl", records))).exit_code == 0
    out = tmp_path / "data" / "related"

    first = run("export", "related", "--out", str(out), "-k", "5")
    assert first.exit_code == 0, first.output
    assert "exported every list" in first.output and "30 written, 0 unchanged" in first.output
    written = files(out)
    assert set(written) == {MANIFEST} | {file_name(r["id"], "json") for r in records}
    assert file_name("javaguide/README.md", "json") == "javaguide%2FREADME.md.json"
    body = json.loads(written[file_name(records[1]["id"], "json")])
    api = run("related", records[1]["id"], "-k", "5", "--format", "json")
    assert body == json.loads(api.output)  # the HTTP body (urls usable as they are)

    again = run("export", "related", "--out", str(out), "-k", "5")
    assert "the lists changed after sequence" in again.output and "0 written" in again.output
    assert files(out) == written  # nothing changed: nothing recomputed or rewritten

    edited = {**records[3], "title": "改过的标题"}
    gone = records[4]["id"]
    assert run("ingest", str(write_jsonl(tmp_path / "b.jsonl", [edited]))).exit_code == 0
    assert run("article", "delete", gone).exit_code == 0
    third = run("export", "related", "--out", str(out), "-k", "5")
    assert third.exit_code == 0 and "1 removed" in third.output
    now = files(out)
    assert file_name(gone, "json") not in now
    changed = {n for n in now if n != MANIFEST and now[n] != written.get(n)}

    def named(text: str) -> set[str]:
        return {item["id"] for item in json.loads(text)["items"]}

    naming = {
        n for n, text in written.items() if n != MANIFEST and {records[3]["id"], gone} & named(text)
    }
    assert naming and naming <= changed | {file_name(records[3]["id"], "json")}
    assert len(changed) < 29  # not every list
    full = run("export", "related", "--out", str(out), "-k", "5", "--full")
    assert "every list" in full.output and " 0 written" in full.output  # the increments were right


def test_html_export_keeps_hostile_text_inert_and_json_is_safe_in_a_script(
    settings: Settings, data_dir: Path, tmp_path: Path
) -> None:
    run = runner(settings)
    records = javaguide_records(data_dir, 20)
    mixed = records[0]["content"][:1500] + "\n" + records[2]["content"][:1500]
    hostile = {"id": "hostile", "url": "/p/hostile", "content": mixed}
    hostile.update(
        {k: v for k, v in HOSTILE.items() if k in ("title", "summary", "category", "image")}
    )
    assert run("db", "upgrade").exit_code == 0
    path = write_jsonl(tmp_path / "a.jsonl", [*records, hostile])
    assert run("ingest", str(path)).exit_code == 0
    html_out, json_out = tmp_path / "html", tmp_path / "json"
    base = ("-k", "20", "--link", "/post/{id}")
    assert (
        run(
            "export",
            "related",
            "--out",
            str(html_out),
            "--format",
            "html",
            "--layout",
            "grid",
            *base,
        ).exit_code
        == 0
    )
    assert run("export", "related", "--out", str(json_out), *base).exit_code == 0
    shown = 0
    for name, text in files(html_out).items():
        if name == MANIFEST or "/p/hostile" not in text:
            continue
        shown += 1
        elements = parsed(text)
        assert not [t for t, _ in elements.tags if t in ("script", "svg")]
        assert all(not n.startswith("on") for _, a in elements.tags for n in a)
        assert "javascript:" not in text
    assert shown >= 1
    for name, text in files(json_out).items():
        assert "<" not in text and ">" not in text  # \\u003c: safe inside <script> too
        if name not in (MANIFEST, "hostile.json") and "hostile" in text:
            items = {i["id"]: i for i in json.loads(text)["items"]}
            assert (
                items["hostile"]["title"] == HOSTILE["title"] and items["hostile"]["image"] is None
            )


def test_bad_arguments_exit_2_and_write_nothing(settings: Settings, tmp_path: Path) -> None:
    run = runner(settings)
    assert run("db", "upgrade").exit_code == 0
    out = tmp_path / "out"
    for args in (
        ["--format", "xml"],
        ["-k", "0"],
        ["-k", "101"],
        ["--lang", "<x>"],
        ["--show", "votes"],
        ["--since", "-1"],
    ):
        result = run("export", "related", "--out", str(out), *args)
        assert result.exit_code == 2, (args, result.output)
    assert not out.exists()
    assert run("export", "related").exit_code == 2  # --out is required
