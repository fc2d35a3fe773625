"""``recengine report``: numbers from SQL, exact nearest neighbours, a readable HTML page."""

from __future__ import annotations

import html
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from recengine.cli import main
from recengine.cli.context import CliContext
from recengine.config import Settings
from recengine.features.simhash import hamming_many
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.full import reindex
from recengine.report.data import gather, nearest_distances
from recengine.storage.models import ClusterMember
from tests.factories import javaguide_records


def brute_nearest(fps: np.ndarray) -> np.ndarray:
    d = hamming_many(fps[:, None], fps[None, :]).astype(np.int64)
    np.fill_diagonal(d, 99)
    return d.min(axis=1)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), min_size=2, max_size=60), st.data())
def test_nearest_distances_match_brute_force(values: list[int], data: st.DataObject) -> None:
    base = values + [v ^ (1 << data.draw(st.integers(0, 63))) for v in values[:3]] + values[:2]
    fps = np.array(base, dtype=np.uint64)
    assert nearest_distances(fps, sample=10_000).tolist() == brute_nearest(fps).tolist()


def test_nearest_distances_sample_is_a_subset(tmp_path: Path) -> None:
    fps = np.random.default_rng(3).integers(0, 2**63, 500, dtype=np.int64).astype(np.uint64)
    sampled = nearest_distances(fps, sample=50)
    assert len(sampled) == 50 and set(sampled.tolist()) <= set(brute_nearest(fps).tolist())
    assert len(nearest_distances(fps[:1], sample=50)) == 0


def test_report_shows_clusters_terms_and_suppression(
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    settings: Settings,
    data_dir: Path,
    tmp_path: Path,
) -> None:
    records = javaguide_records(data_dir, 40)
    copies = [
        {**records[0], "id": "copy-1", "title": "转载 <b>" + records[0]["title"] + "</b>"},
        {**records[0], "id": "copy-2", "content": records[0]["content"] + "\n（完）"},
        {**records[1], "id": "copy-3"},
    ]
    Ingester(factory, featurizer).ingest_records(records + copies)
    reindex(factory=factory, featurizer=featurizer)  # clusters the copies with their originals
    with factory() as session:
        stored = session.execute(select(ClusterMember.article_id, ClusterMember.canonical_id))
        assert len(stored.all()) == 3
    data = gather(factory, database="test", hamming_k=settings.features.hamming_k, sample=1000)
    assert data.cluster_sizes == [3, 2]
    assert (data.hidden_duplicates, data.suppressed_pairs, data.in_clusters) == (3, 8, 5)
    assert data.largest[0].canonical == (records[0]["id"], records[0]["title"])
    members = data.largest[0].members
    assert {m[0] for m in members} == {"copy-1", "copy-2"}
    assert members[0][2] <= members[1][2]  # closest first
    assert data.near_fraction >= 5 / 43  # the copies have a neighbour within k
    assert data.top_terms[0][1] >= data.top_terms[-1][1]

    out = tmp_path / "report"
    result = CliRunner().invoke(main, ["report", "-o", str(out)], obj=CliContext(settings))
    assert result.exit_code == 0, result.output
    assert "2 duplicate clusters, 8 suppressed recommendations" in result.output
    page = (out / "index.html").read_text("utf-8")
    assert html.escape(records[0]["title"]) in page
    assert "转载 &lt;b&gt;" in page  # escaped, never raw HTML
    assert "43" in page and data.top_terms[0][0] in page
    for png in ("nn_hamming.png", "cluster_sizes.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_on_an_empty_database(settings: Settings, tmp_path: Path, engine: object) -> None:
    result = CliRunner().invoke(
        main, ["report", "-o", str(tmp_path / "r")], obj=CliContext(settings)
    )
    assert result.exit_code == 0, result.output
    page = (tmp_path / "r" / "index.html").read_text("utf-8")
    assert "no IDF model yet" in page and "No near-duplicate clusters" in page
    assert datetime.now(UTC).strftime("%Y-%m-%d") in page


def test_the_report_links_articles_and_marks_the_corpus_language(
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    settings: Settings,
    data_dir: Path,
    tmp_path: Path,
) -> None:
    """Titles link to the articles' pages (a site-relative url with --site); the page's own
    words are English, the corpus's text is marked zh; the wording says what a fingerprint
    within k is (a candidate), not that it makes a near-duplicate."""
    records = javaguide_records(data_dir, 30)
    records[0]["url"] = "https://blog.example.com/posts/0"
    copies = [
        {**records[0], "id": "copy-1", "url": "/reposts/1"},
        {**records[0], "id": "copy-2", "url": "javascript:alert(1)"},
    ]
    Ingester(factory, featurizer).ingest_records(records + copies)
    reindex(factory=factory, featurizer=featurizer)  # clusters the copies with their original

    def page(*args: str) -> str:
        out = tmp_path / f"report{len(args)}"
        result = CliRunner().invoke(
            main, ["report", "-o", str(out), *args], obj=CliContext(settings)
        )
        assert result.exit_code == 0, result.output
        return (out / "index.html").read_text("utf-8")

    plain = page()
    title = html.escape(records[0]["title"])
    assert plain.startswith("<!doctype html><html lang='en'>")
    assert f"<a href='https://blog.example.com/posts/0'><span lang='zh'>{title}</span></a>" in plain
    assert "href='/reposts/1'" not in plain and "javascript:" not in plain
    assert "(the near-duplicate threshold)" not in plain  # a fingerprint within k is no verdict
    assert "make a pair a <i>candidate</i>" in plain and "bits from their canonical" in plain
    linked = page("--site", "https://blog.example.com/")
    assert f"<a href='https://blog.example.com/reposts/1'><span lang='zh'>{title}" in linked
    bad = CliRunner().invoke(
        main, ["report", "-o", str(tmp_path / "x"), "--site", "blog"], obj=CliContext(settings)
    )
    assert bad.exit_code == 2 and "'--site'" in bad.output


def test_corpus_language_from_titles() -> None:
    from recengine.report.data import corpus_lang

    assert corpus_lang(["Spring Boot 入门", "线程池详解", "A guide to Kafka"]) == "zh"
    assert corpus_lang(["A guide to Kafka", "Rust ownership", "线程池"]) == "en"
    assert corpus_lang(["", "123"]) == "und"
    assert corpus_lang([]) == "und"
