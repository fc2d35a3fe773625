"""A/B ranking variants: deterministic, stable, balanced assignment; each variant's ranking."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from scipy.stats import chisquare
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import ExperimentSettings, Settings, load_settings
from recengine.errors import ConfigError
from recengine.pipeline.featurize import Featurizer
from recengine.recommend.live import LiveIndex
from recengine.recommend.ranking import Variants, split_key
from recengine.recommend.related import RelatedArticles
from tests.factories import javaguide_records
from tests.templates import load

EXPERIMENT = {
    "name": "ranking-1",
    "variants": {
        "control": {"share": 2},
        "strict": {"share": 1, "min_score": 0.2, "k": 3},
        "category": {"share": 1, "weights": {"category": 0.5}},
    },
}
READERS = [f"reader-{n}" for n in range(10_000)]


def variants() -> Variants:
    return Variants(ExperimentSettings.model_validate(EXPERIMENT))


def test_assignment_is_balanced_by_share_chi_square_on_10000_readers() -> None:
    found = variants()
    counts = {name: 0 for name in found.names}
    for reader in READERS:
        counts[found.assign(split_key(reader, None)).name] += 1
    expected = [10_000 * s / 4 for s in (2, 1, 1)]
    result = chisquare([counts["control"], counts["strict"], counts["category"]], expected)
    # a fixed set of readers: the statistic is a fixed number, and a fair split gives p >> 0.01
    assert result.pvalue > 0.01, (counts, result)
    assert abs(counts["control"] - 5_000) < 200


def test_assignment_is_stable_across_processes_and_keys() -> None:
    found = variants()
    here = [found.assign(split_key(r, None)).name for r in READERS[:200]]
    assert here == [found.assign(split_key(r, "any session")).name for r in READERS[:200]]
    # another process (Python's hash() is salted per process: the assignment must not use it)
    code = (
        "from recengine.config import ExperimentSettings; "
        "from recengine.recommend.ranking import Variants, split_key; "
        f"v = Variants(ExperimentSettings.model_validate({EXPERIMENT!r})); "
        "print(','.join(v.assign(split_key(f'reader-{n}', None)).name for n in range(200)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().split(",") == here
    # sessions split too; without a key, the first variant (the control)
    sessions = {found.assign(split_key(None, f"s{n}")).name for n in range(100)}
    assert sessions == set(found.names)
    assert found.assign(None).name == "control"
    # renaming the experiment reshuffles
    renamed = Variants(ExperimentSettings.model_validate({**EXPERIMENT, "name": "ranking-2"}))
    again = [renamed.assign(split_key(r, None)).name for r in READERS[:200]]
    assert sum(a != b for a, b in zip(again, here, strict=True)) > 50


def test_no_experiment_means_one_default_variant() -> None:
    plain = Variants(ExperimentSettings())
    assert plain.names == ("default",) and plain.assign("reader:x").name == "default"


def test_bad_variants_are_refused_with_the_setting_named(tmp_path: Path) -> None:
    for bad, words in (
        ({"variants": {"a b": {}}}, "variant name"),
        ({"variants": {"v": {"weights": {"lsa": 1.0}}}}, "unknown ranking part"),
        ({"variants": {"v": {"share": 0}}}, "share"),
        ({"variants": {"v": {"min_score": 2}}}, "min_score"),
        ({"variants": {"v": {"diversity": 2}}}, "diversity"),
        ({"variants": {"v": {"half_life_days": -1}}}, "half_life_days"),
    ):
        with pytest.raises(ConfigError, match=words):
            load_settings({"data_dir": str(tmp_path), "experiment": {"name": "x", **bad}})


@pytest.fixture
def service(
    settings: Settings, factory: sessionmaker[Session], featurizer: Featurizer, data_dir: Path
) -> RelatedArticles:
    load(factory, featurizer, javaguide_records(data_dir, 60))
    tested = settings.model_copy(
        update={"experiment": ExperimentSettings.model_validate(EXPERIMENT)}
    )
    return RelatedArticles(tested, LiveIndex(tested, factory, background=False))


def reader_in(service: RelatedArticles, name: str) -> str:
    return next(r for r in READERS if service.variants.assign(split_key(r, None)).name == name)


def test_each_variant_ranks_with_its_own_parameters(
    service: RelatedArticles, factory: sessionmaker[Session], data_dir: Path
) -> None:
    records = javaguide_records(data_dir, 60)

    def ask(name: str, query: str, **kw: Any) -> dict[str, Any]:
        key = split_key(reader_in(service, name), None)
        with factory() as session:
            return service.related(query, session=session, split_by=key, **kw)

    first = records[0]["id"]
    control = ask("control", first, k=10)
    assert control["variant"] == "control" and control["floor"]["min_score"] == 0.04
    assert len(control["items"]) == 10
    strict = ask("strict", first, k=10)  # the variant's k and floor replace the request's
    assert strict["variant"] == "strict" and 0 < len(strict["items"]) <= 3
    assert strict["floor"]["min_score"] == 0.2 and all(i["score"] >= 0.2 for i in strict["items"])
    # a category bonus of 0.5 puts the same-category items first, each group by cosine
    query = next(r["id"] for r in records if r["category"] == "AI 编程实战")
    plain = ask("control", query, k=15, min_score=0)["items"]
    blended = ask("category", query, k=15, min_score=0)["items"]
    same = [i["reasons"]["same_category"] for i in plain]
    assert any(same) and same != sorted(same, reverse=True)  # mixed in the plain ranking
    grouped = [i["reasons"]["same_category"] for i in blended]
    assert grouped == sorted(grouped, reverse=True) and any(grouped)
    cosine = {i["id"]: i["score"] for i in plain}
    for item in blended:
        if item["id"] in cosine:
            bonus = 0.5 if item["reasons"]["same_category"] else 0.0
            assert item["score"] == pytest.approx(cosine[item["id"]] + bonus, abs=2e-6)


SIGNALS = {
    "name": "signals-1",
    "variants": {
        "control": {},
        "fresh": {"half_life_days": 7},
        "diverse": {"diversity": 0.6},
        "filled": {"min_items": 40, "min_score": 0.1},
    },
}


def test_a_variant_may_set_the_signals_and_the_report_reads_what_it_changes(
    settings: Settings, factory: sessionmaker[Session], featurizer: Featurizer, data_dir: Path
) -> None:
    """Freshness, diversity and the fallback are ranking parameters like k or the floor: each
    variant ranks with its own, and says what it changes (``recengine report`` shows it)."""
    records = javaguide_records(data_dir, 60)
    for n, r in enumerate(records):
        r["published_at"] = f"2024-{1 + n % 12:02d}-{1 + n % 28:02d}T08:00:00+00:00"
    load(factory, featurizer, records)
    tested = settings.model_copy(update={"experiment": ExperimentSettings.model_validate(SIGNALS)})
    service = RelatedArticles(tested, LiveIndex(tested, factory, background=False))
    assert [r.describe() for r in service.variants.rankings] == [
        "as configured",
        "half_life_days=7",
        "diversity=0.6",
        "min_score=0.1, min_items=40",
    ]

    def ask(name: str) -> dict[str, Any]:
        key = split_key(reader_in(service, name), None)
        with factory() as session:
            return service.related(records[0]["id"], session=session, split_by=key, k=40)

    control, fresh, diverse, filled = (ask(n) for n in ("control", "fresh", "diverse", "filled"))
    assert not any("freshness" in i["reasons"] for i in control["items"])
    assert all("freshness" in i["reasons"] for i in fresh["items"]) and fresh["items"]
    assert [i["id"] for i in fresh["items"]] != [i["id"] for i in control["items"]]
    scores = [i["score"] for i in diverse["items"]]
    assert sorted(scores, reverse=True) != scores  # reordered, not rescored
    assert {i["id"] for i in diverse["items"]} == {i["id"] for i in control["items"]}
    assert len(filled["items"]) == 40 and filled["items"][-1]["reasons"]["fallback"] == "newest"
    assert (fresh["variant"], diverse["variant"], filled["variant"]) == (
        "fresh",
        "diverse",
        "filled",
    )
