"""Every kind of reason an item can carry prints in every output format of the command line.

The kinds come from the code that produces them (``recommend.lists.reasons.Reasons``, which mypy
holds every producer to): a new kind without a text printer, or without a sample here, fails.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from recengine.cli import main
from recengine.cli.context import CliContext
from recengine.cli.output import REASON_TEXT, print_ranked, reason_lines
from recengine.config import Settings
from recengine.pipeline.feedback import CLICK, Event, FeedbackCounter
from recengine.recommend.lists.reasons import REASON_KINDS
from tests.factories import javaguide_records, write_jsonl

TODAY = datetime.now(UTC).date()

# One telling value of each kind (what the text must show of it).
SAMPLES: dict[str, tuple[Any, str]] = {
    "shared_terms": ([{"term": "线程池", "weight": 0.12}], "shared: 线程池"),
    "dense": (0.0312, "semantic part: 0.0312"),
    "same_category": (True, "same category"),
    "shared_tags": (["Java", "并发"], "shared tags: Java, 并发"),
    "pinned": (True, "pinned by an editor"),
    "because_you_read": (["a1", "a2"], "because you read: a1, a2"),
    "interest_share": (0.35, "interest: 35% of the reading history"),
    "fresh": (True, "new: among the newest articles"),
    "freshness": (0.7071, "freshness: score x 0.7071 for its age"),
    "fallback": ("newest", "filling a short list: among the newest of its category"),
    "coread": (0.0421, "readers of this also read it: 0.0421"),
    "engagement": (-0.0123, "readers' clicks: -0.0123"),
    "explore": (True, "exploring: shown to learn how readers take it"),
}


def test_the_kinds_are_the_producers_and_every_one_has_a_sample() -> None:
    assert set(REASON_KINDS) == {
        "shared_terms", "dense", "same_category", "shared_tags", "pinned",
        "because_you_read", "interest_share", "fresh", "freshness", "fallback", "coread",
        "engagement", "explore",
    }  # fmt: skip
    assert set(SAMPLES) == set(REASON_KINDS), "a new reason kind: add its sample and printer"


@pytest.mark.parametrize("kind", REASON_KINDS)
def test_every_kind_prints_as_text_and_as_json(kind: str) -> None:
    value, shown = SAMPLES[kind]
    assert kind in REASON_TEXT, f"no text printer for reasons.{kind}"
    assert any(shown in line for line in reason_lines({kind: value}))
    body = {
        "user": "u",
        "items": [{"id": "x", "title": "t", "url": None, "score": 0.5, "reasons": {kind: value}}],
        "suppressed": [],
    }
    runner = CliRunner()
    with runner.isolation() as (out, _err, *_):
        print_ranked("feed of u:", body, session=None)  # type: ignore[arg-type]
    assert shown in out.getvalue().decode()
    assert json.loads(json.dumps(body, ensure_ascii=False))["items"][0]["reasons"] == {kind: value}


def test_an_item_with_every_kind_at_once() -> None:
    lines = reason_lines({kind: value for kind, (value, _) in SAMPLES.items()})
    assert len(lines) == len(SAMPLES)


def test_an_unknown_kind_prints_as_kind_and_value() -> None:
    """A body from a newer server (HTTP) never breaks an older listing."""
    assert reason_lines({"novel": [1, 2]}) == ["novel: [1, 2]"]


def test_every_list_and_feed_prints_its_reasons(
    settings: Settings, data_dir: Path, tmp_path: Path
) -> None:
    """The reasons real lists carry, through the commands: fresh (a reader with no history),
    because_you_read and interest_share, pinned in a list and in a feed, shared terms, dense,
    category and tags, freshness (a half-life set, dated articles) and fallback (an article
    with nothing related, min_items set); readers' signals (co-reads, engagement, exploration)
    where the settings weigh them. Every kind is met, and printed in both formats."""
    runner = CliRunner()
    related = {
        "half_life_days": 30.0,
        "min_items": 3,
        "coread_weight": 0.3,
        "engagement_weight": 0.3,
        "explore_share": 0.5,
    }
    settings = settings.model_copy(
        update={
            "related": settings.related.model_copy(update=related),
            "signals": settings.signals.model_copy(update={"refresh_s": 0.0}),
        }
    )

    def run(*args: str) -> Any:
        result = runner.invoke(main, list(args), obj=CliContext(settings))
        assert result.exit_code == 0, result.output
        return result.output

    records = javaguide_records(data_dir, 30)
    for n, r in enumerate(records):
        r["published_at"] = f"2024-05-{1 + n:02d}T08:00:00+00:00"
    lone = "A tennis club in the hills opens its clay courts to visitors every Sunday morning."
    records.append({"id": "lone", "title": "Sunday tennis", "content": lone})
    ids = [r["id"] for r in records]
    run("db", "upgrade")
    run("ingest", str(write_jsonl(tmp_path / "a.jsonl", records)))
    run("override", "add", "pin", ids[0], ids[29], "--by", "ed")
    run("events", "reader", ids[0], ids[1])
    run("events", "another", ids[0], ids[1])  # two reader-days read both: co-read
    counter = FeedbackCounter(settings, CliContext(settings).factory, ["default"])
    counter.commit([Event(CLICK, i, "default", 0, ids[2]) for i in ids[:6] if i != ids[2]], TODAY)

    met: set[str] = set()
    lists = [["related", i] for i in ids[:6]]  # one at least explores below its page
    for command in (["feed", "nobody"], ["feed", "reader"], ["related", "lone"], *lists):
        body = json.loads(run(*command, "--format", "json"))
        text = run(*command)
        assert body["items"], command
        for entry in body["items"]:
            met |= set(entry["reasons"])
            for line in reason_lines(entry["reasons"]):
                assert line in text
    assert met == set(REASON_KINDS)
    assert "new: among the newest articles" in run("feed", "nobody")
    assert "pinned by an editor" in run("feed", "reader")
    assert "filling a short list: among the newest of its category" in run("related", "lone")
