"""``recengine report``'s reader feedback: CTR by variant and slot, 95 % intervals, and the
verdict on each variant's difference from the control; on the daily counters in SQL."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

from click.testing import CliRunner
from sqlalchemy.orm import Session, sessionmaker

from recengine.cli import main
from recengine.cli.context import CliContext
from recengine.config import Settings
from recengine.report.ctr import Rate, ctr_report, two_proportion_p, wilson
from recengine.storage.db import transaction
from recengine.storage.rows.feedback import add_counts, article_ids
from tests.conftest import make_settings
from tests.factories import record, write_jsonl


def test_wilson_interval_matches_the_textbook_values() -> None:
    # Newcombe (1998), table I: 0/10 -> 0 to 0.2775; 81/263 -> 0.2553 to 0.3662
    low, high = wilson(0, 10)
    assert low == 0.0 and math.isclose(high, 0.2775, abs_tol=5e-5)
    low, high = wilson(81, 263)
    assert math.isclose(low, 0.2553, abs_tol=5e-5) and math.isclose(high, 0.3662, abs_tol=5e-5)
    assert wilson(0, 0) == (0.0, 1.0)


def test_two_proportion_test_and_its_coverage() -> None:
    # 80/1000 vs 50/1000: pooled p = 0.065, z = 2.72, p = 0.0065
    p = two_proportion_p(Rate(1000, 80), Rate(1000, 50))
    assert p is not None and math.isclose(p, 0.00651, rel_tol=0.01)
    assert two_proportion_p(Rate(50, 5), Rate(1000, 50)) is None  # too few to test
    # the 95 % interval covers the true rate about 95 % of the time (seeded simulation)
    rng = random.Random(5)
    covered = 0
    for _ in range(2000):
        clicks = sum(rng.random() < 0.04 for _ in range(500))
        low, high = wilson(clicks, 500)
        covered += low <= 0.04 <= high
    assert 0.93 <= covered / 2000 <= 0.97


def test_equal_variants_are_stated_not_significant() -> None:
    rows = [
        ("control", 0, 5000, 200),
        ("control", 1, 5000, 150),
        ("b", 0, 5000, 210),
        ("b", 1, 5000, 148),
        ("big", 0, 5000, 400),
        ("big", 1, 5000, 300),
    ]
    report = ctr_report(rows, ["control", "b", "big"], ("2026-11-01", "2026-11-28"))
    assert list(report.by_variant) == ["control", "b", "big"]
    assert report.by_variant["control"] == Rate(10000, 350)
    assert report.by_slot["b"][1] == Rate(5000, 148)
    b, big = report.comparisons
    assert b.p_value is not None and b.p_value > 0.05
    assert "NOT significant" in b.statement
    assert big.p_value is not None and big.p_value < 0.001
    assert "significant at the 5 % level" in big.statement and "NOT" not in big.statement


def _count(
    factory: sessionmaker[Session], days: dict[int, dict[tuple[str, int], tuple[int, int]]]
) -> None:
    today = datetime.now(UTC).date()
    with transaction(factory) as session:
        (aid,) = article_ids(session=session, external_ids=["a0"]).values()
        add_counts(
            session=session,
            counts={
                (today - timedelta(days=ago), aid, v, s): n
                for ago, by in days.items()
                for (v, s), n in by.items()
            },
        )


def test_report_shows_ctr_by_variant_and_slot(tmp_path: Path, database_url: str) -> None:
    experiment = {
        "name": "floor-test",
        "variants": {
            "control": {"share": 1},
            "strict": {"share": 1, "min_score": 0.2},
            "fresh": {"share": 1, "half_life_days": 7},
        },
    }
    settings: Settings = make_settings(tmp_path, database_url, experiment=experiment)
    runner = CliRunner()
    assert runner.invoke(main, ["db", "upgrade"], obj=CliContext(settings)).exit_code == 0
    path = write_jsonl(tmp_path / "a.jsonl", [record(i) for i in range(3)])
    assert runner.invoke(main, ["ingest", str(path)], obj=CliContext(settings)).exit_code == 0
    ctx = CliContext(settings)
    _count(
        ctx.factory,
        {
            0: {
                ("control", 0): (3000, 120),
                ("strict", 0): (3000, 126),
                ("control", 1): (2000, 40),
            },
            1: {("strict", 1): (2000, 44), ("fresh", 0): (3000, 150)},
            40: {("strict", 0): (100_000, 99_000)},  # outside the 28 days: not counted
        },
    )
    out = tmp_path / "report"
    result = runner.invoke(main, ["report", "-o", str(out)], obj=CliContext(settings))
    assert result.exit_code == 0, result.output
    assert "strict vs control" in result.output and "NOT significant" in result.output
    page = (out / "index.html").read_text("utf-8")
    assert "Reader feedback" in page and "5,000" in page and "170" in page
    assert "NOT significant" in page
    # each variant's CTR beside what its ranking changes, the signals' variants too
    assert "fresh vs control" in result.output
    for variant, changes in (
        ("control", "as configured"),
        ("strict", "min_score=0.2"),
        ("fresh", "half_life_days=7"),
    ):
        assert f"<td>{variant}</td><td>{changes}</td>" in page
    assert (out / "ctr_by_slot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
