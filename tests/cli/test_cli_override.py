"""``recengine override list|add|remove``: JSON out, clear errors, and a second process that
stores an override this one's clusters and lists then honour; SQLite and PostgreSQL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from sqlalchemy.orm import Session, sessionmaker

from recengine.cli import main
from recengine.cli.context import CliContext
from recengine.config import Settings
from recengine.pipeline.featurize import Featurizer
from tests.neardup_helpers import clusters, corpus
from tests.templates import load


def run(settings: Settings, *args: str) -> Result:
    return CliRunner().invoke(main, list(args), obj=CliContext(settings))


@pytest.fixture
def loaded(
    factory: sessionmaker[Session], featurizer: Featurizer, data_dir: Path
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    bases, reposts = corpus(data_dir, 12, 3)
    load(factory, featurizer, bases + reposts)
    return bases, reposts


def test_add_list_remove_as_json(
    settings: Settings,
    factory: sessionmaker[Session],
    loaded: tuple[list[dict[str, Any]], list[dict[str, Any]]],
) -> None:
    bases, reposts = loaded
    assert clusters(factory)[reposts[0]["id"]][0] == bases[0]["id"]
    done = run(
        settings,
        "override",
        "add",
        "not_duplicate",
        bases[0]["id"],
        reposts[0]["id"],
        "--reason",
        "a <b>redirect</b> page",
        "--by",
        "ed",
    )
    assert done.exit_code == 0, done.output
    added = json.loads(done.output)
    assert added["created"] is True
    row = added["override"]
    assert (row["kind"], row["by"], row["reason"]) == (
        "not_duplicate",
        "ed",
        "a <b>redirect</b> page",
    )
    assert {row["article"], row["other"]} == {bases[0]["id"], reposts[0]["id"]} and row["active"]
    assert reposts[0]["id"] not in clusters(factory)  # the clusters follow at once
    pin = json.loads(run(settings, "override", "add", "pin", bases[1]["id"], bases[2]["id"]).output)
    assert pin["override"]["by"]  # the user name when --by is left out
    listed = json.loads(run(settings, "override", "list").output)
    assert [o["id"] for o in listed["overrides"]] == [row["id"], pin["override"]["id"]]
    assert listed["next_after"] is None
    only = json.loads(run(settings, "override", "list", "--kind", "pin").output)
    assert [o["kind"] for o in only["overrides"]] == ["pin"]
    page = json.loads(run(settings, "override", "list", "--limit", "1").output)
    assert page["next_after"] == row["id"]
    gone = json.loads(run(settings, "override", "remove", str(row["id"])).output)
    assert gone["override"]["id"] == row["id"]
    assert clusters(factory)[reposts[0]["id"]][0] == bases[0]["id"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["add", "nonsense", "a"], "kind must be one of"),
        (["add", "pin", "{base0}"], "needs the other article"),
        (["add", "exclude", "no-such-article"], "no article with id 'no-such-article'"),
        (["remove", "999"], "no override with id 999"),
        (["list", "--kind", "nonsense"], "kind must be one of"),
        (["add", "exclude", "{base0}", "--by", " "], "by (who decided)"),
        (["add", "pin", "{base0}", "{repost0}"], "near-duplicate of the article"),
    ],
)
def test_bad_input_is_a_clear_error_and_changes_nothing(
    settings: Settings,
    loaded: tuple[list[dict[str, Any]], list[dict[str, Any]]],
    args: list[str],
    message: str,
) -> None:
    bases, reposts = loaded
    named = {"base0": bases[0]["id"], "repost0": reposts[0]["id"]}
    done = run(settings, "override", *[a.format(**named) for a in args])
    assert done.exit_code == 2 and message in done.output, done.output
    assert "Traceback" not in done.output
    assert json.loads(run(settings, "override", "list").output)["overrides"] == []


def test_an_override_from_a_second_process_holds_here(
    settings: Settings,
    factory: sessionmaker[Session],
    loaded: tuple[list[dict[str, Any]], list[dict[str, Any]]],
) -> None:
    bases, _ = loaded
    env = {
        **os.environ,
        "RECENGINE_DATABASE_URL": settings.resolved_database_url,
        "RECENGINE_DATA_DIR": str(settings.data_dir),
    }
    command = [sys.executable, "-c", "from recengine.cli import main; main()", "override", "add"]
    done = subprocess.run(
        [*command, "same_article", bases[4]["id"], bases[6]["id"], "--by", "other process"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["override"]["by"] == "other process"
    assert clusters(factory)[bases[6]["id"]][0] == bases[4]["id"]
    listed = json.loads(run(settings, "override", "list", "--article", bases[6]["id"]).output)
    assert [o["kind"] for o in listed["overrides"]] == ["same_article"]
