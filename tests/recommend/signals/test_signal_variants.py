"""Each readers' signal is a ranking variant the A/B machinery serves, and ``recengine report``
shows its CTR against the control, with what it ranks with."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy.orm import Session, sessionmaker

from recengine.cli import main
from recengine.cli.context import CliContext
from recengine.config import Settings, load_settings
from recengine.errors import ConfigError
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.feedback import CLICK, IMPRESSION, Event, FeedbackCounter
from recengine.recommend.live import LiveIndex
from recengine.recommend.ranking import Variants, split_key
from recengine.recommend.related import RelatedArticles
from recengine.recommend.signals.scoring import Weights, answers_epoch, in_use
from tests.conftest import make_settings
from tests.factories import javaguide_records, write_jsonl
from tests.templates import load

EXPERIMENT = {
    "name": "signals-1",
    "variants": {
        "control": {"share": 1},
        "clicks": {"share": 1, "engagement_weight": 0.5, "explore_share": 0.2},
        "coreads": {"share": 1, "coread_weight": 0.3},
    },
}


def test_bad_signal_weights_are_refused_with_the_setting_named(tmp_path: Path) -> None:
    for bad, words in (
        ({"engagement_weight": 1.5}, "engagement_weight"),
        ({"coread_weight": -0.1}, "coread_weight"),
        ({"explore_share": 0.9}, "explore_share"),
    ):
        with pytest.raises(ConfigError, match=words):
            load_settings(
                {"data_dir": str(tmp_path), "experiment": {"name": "x", "variants": {"v": bad}}}
            )
        with pytest.raises(ConfigError, match=words):
            load_settings({"data_dir": str(tmp_path), "related": bad})


def test_the_weights_of_each_variant_and_what_the_cache_keys_on(tmp_path: Path) -> None:
    plain = {"engagement_weight": 0.0, "coread_weight": 0.0, "explore_share": 0.0}
    settings = load_settings(
        {"data_dir": str(tmp_path), "experiment": EXPERIMENT, "related": plain}
    )
    variants = Variants.from_settings(settings)
    r = settings.related
    assert variants.by_name("control").signals(r) == Weights()  # type: ignore[union-attr]
    assert variants.by_name("clicks").signals(r) == Weights(0.5, 0.0, 0.2)  # type: ignore[union-attr]
    assert in_use(settings) == Weights(0.5, 0.3, 0.2)
    assert variants.described() == {
        "control": "as configured",
        "clicks": "engagement_weight=0.5, explore_share=0.2",
        "coreads": "coread_weight=0.3",
    }
    # answers are kept one refresh of the signals (and one exploration period) at most
    s = settings.signals
    start = 100 * s.explore_period_s
    assert answers_epoch(settings, start) == answers_epoch(settings, start + s.refresh_s - 1)
    assert answers_epoch(settings, start) != answers_epoch(settings, start + s.refresh_s)
    # without signals anywhere, the cache keys on nothing more than before
    none = load_settings({"data_dir": str(tmp_path), "related": plain})
    assert answers_epoch(none, 0.0) == answers_epoch(none, 10**9) == 0


def test_a_variant_ranks_with_its_signals_and_the_control_without(
    settings: Settings, factory: sessionmaker[Session], featurizer: Featurizer, data_dir: Path
) -> None:
    records = javaguide_records(data_dir, 40)
    load(factory, featurizer, records)
    plain = {"engagement_weight": 0.0, "coread_weight": 0.0, "explore_share": 0.0}
    data = settings.model_dump(mode="json")
    tested = load_settings(
        {**data, "related": {**data["related"], **plain}, "experiment": EXPERIMENT}
    )
    svc = RelatedArticles(tested, LiveIndex(tested, factory, background=False))
    query = records[0]["id"]
    counter = FeedbackCounter(tested, factory, svc.variants.names)
    counter.commit([Event(IMPRESSION, query, "clicks", 3, records[5]["id"])] * 50, TODAY)
    counter.commit([Event(CLICK, query, "clicks", 3, records[5]["id"])] * 10, TODAY)

    def reader_in(name: str) -> str | None:
        return next(
            split_key(f"r{n}", None)
            for n in range(1000)
            if svc.variants.assign(split_key(f"r{n}", None)).name == name
        )

    bodies: dict[str, Any] = {}
    for name in ("control", "clicks"):
        with factory() as session:
            bodies[name] = svc.related(query, session=session, k=10, split_by=reader_in(name))
        assert bodies[name]["variant"] == name
    assert all(
        not {"engagement", "explore"} & set(i["reasons"]) for i in bodies["control"]["items"]
    )
    clicked = next(i for i in bodies["clicks"]["items"] if i["id"] == records[5]["id"])
    assert clicked["reasons"]["engagement"] > 0


TODAY = datetime.now(UTC).date()


def test_report_shows_each_variants_ranking_and_its_ctr_against_the_control(
    tmp_path: Path, database_url: str
) -> None:
    settings = make_settings(tmp_path, database_url, experiment=EXPERIMENT)
    runner = CliRunner()
    assert runner.invoke(main, ["db", "upgrade"], obj=CliContext(settings)).exit_code == 0
    records = javaguide_records(Path(__file__).parents[2] / "data", 5)
    path = write_jsonl(tmp_path / "a.jsonl", records)
    assert runner.invoke(main, ["ingest", str(path)], obj=CliContext(settings)).exit_code == 0
    ctx = CliContext(settings)
    counter = FeedbackCounter(settings, ctx.factory, ["control", "clicks", "coreads"])
    query, item = records[0]["id"], records[1]["id"]
    for variant, clicks in (("control", 20), ("clicks", 45)):
        for _ in range(20):
            counter.commit([Event(IMPRESSION, query, variant, s, item) for s in range(50)], TODAY)
        counter.commit([Event(CLICK, query, variant, 0, item)] * clicks, TODAY)
    out = tmp_path / "report"
    result = runner.invoke(main, ["report", "-o", str(out)], obj=CliContext(settings))
    assert result.exit_code == 0, result.output
    assert "clicks vs control: CTR difference +2.50%" in result.output
    page = (out / "index.html").read_text("utf-8")
    assert "engagement_weight=0.5, explore_share=0.2" in page and "as configured" in page
