"""``GET /metrics`` (parsed with prometheus-client's own parser) and the JSON logs.

In process (one app, its own registry) and through ``recengine serve`` with two workers
(prometheus-client's multiprocess mode: a scrape reaching either worker counts both).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.full import reindex
from recengine.storage.db import make_session_factory, transaction
from recengine.storage.models import ArticleFeatures, EngineState, IdfModelRow
from tests.factories import javaguide_records, record
from tests.web.conftest import AUTH
from tests.web.server.test_serve import from_every_worker, server_env
from tests.web.serving import call, served

RELATED = "/api/v1/articles/<id:article_id>/related"


def scrape(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a scrape: ``(name, sorted labels) -> value``."""
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def value(samples: dict[Any, float], name: str, **labels: str) -> float:
    return samples[(name, tuple(sorted(labels.items())))]


def metrics(client: FlaskClient) -> dict[Any, float]:
    response = client.get("/metrics", headers=AUTH)
    assert response.status_code == 200, response.data
    assert response.content_type.startswith("text/plain; version=0.0.4")
    return scrape(response.get_data(as_text=True))


def ingest_corpus(factory: sessionmaker[Session], featurizer: Featurizer, data: Path) -> list[Any]:
    records = javaguide_records(data, 30)
    Ingester(factory, featurizer).ingest_records(records)
    reindex(factory=factory, featurizer=featurizer)
    return records


def test_metrics_count_requests_by_route_and_status_and_follow_the_index(
    client: FlaskClient, factory: sessionmaker[Session], featurizer: Featurizer, data_dir: Path
) -> None:
    records = ingest_corpus(factory, featurizer, data_dir)
    for r in records[:3]:
        assert client.get(f"/api/v1/articles/{r['id']}/related").status_code == 200
    assert client.get("/api/v1/articles/nope/related").status_code == 404
    assert client.get("/no/such/path").status_code == 404
    found = metrics(client)
    count = "recengine_http_request_duration_seconds_count"
    assert value(found, count, endpoint=RELATED, method="GET", status="200") == 3
    assert value(found, count, endpoint=RELATED, method="GET", status="404") == 1
    assert value(found, count, endpoint="unmatched", method="GET", status="404") == 1
    bucket = "recengine_http_request_duration_seconds_bucket"
    infinite = value(found, bucket, endpoint=RELATED, method="GET", status="200", le="+Inf")
    assert infinite == 3
    assert value(found, "recengine_index_articles", kind="related") == len(records)
    assert value(found, "recengine_index_bytes", kind="related") > 0
    assert value(found, "recengine_index_lag", kind="related") == 0
    assert value(found, "recengine_reindex_pending") == 0
    with transaction(factory) as session:
        seq = session.scalar(select(EngineState.seq))
    assert value(found, "recengine_database_seq") == seq
    assert value(found, "recengine_index_seq", kind="related") == seq

    # a write the index has not applied yet is lag; the next read catches up
    assert client.post("/api/v1/articles", json=record("new"), headers=AUTH).status_code == 200
    assert value(metrics(client), "recengine_index_lag", kind="related") == 1
    client.get(f"/api/v1/articles/{records[0]['id']}/related")
    after = metrics(client)
    assert value(after, "recengine_index_lag", kind="related") == 0
    assert value(after, "recengine_index_articles", kind="related") == len(records) + 1


def test_reindex_progress_is_read_from_sql(
    client: FlaskClient, factory: sessionmaker[Session], featurizer: Featurizer, data_dir: Path
) -> None:
    """A model newer than the active one is a reindex in pass 2: features written so far."""
    records = ingest_corpus(factory, featurizer, data_dir)
    with transaction(factory) as session:
        active = session.scalar(select(EngineState.active_model_version))
        model = session.get(IdfModelRow, active)
        assert model is not None
        pending = IdfModelRow(
            created_at=datetime.now(UTC),
            n_docs=model.n_docs,
            n_terms=model.n_terms,
            params=model.params,
            payload=model.payload,
        )
        session.add(pending)
        session.flush()
        rows = session.scalars(
            select(ArticleFeatures).where(ArticleFeatures.model_version == active).limit(7)
        ).all()
        for row in rows:
            session.add(
                ArticleFeatures(
                    article_id=row.article_id,
                    model_version=pending.version,
                    fingerprint=row.fingerprint,
                    vector=row.vector,
                    n_tokens=row.n_tokens,
                )
            )
    found = metrics(client)
    assert value(found, "recengine_reindex_pending") == 1
    assert value(found, "recengine_reindex_articles_written") == 7
    assert value(found, "recengine_reindex_articles_total") == len(records)


def test_metrics_need_the_key_unless_public(make_app: Callable[..., Flask]) -> None:
    closed = make_app().test_client()
    assert closed.get("/metrics").status_code == 401
    assert closed.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 403
    public = make_app(metrics={"public": True}).test_client()
    assert public.get("/metrics").status_code == 200
    # the published document says so: the key's security requirement and its 401/403
    documented = closed.get("/openapi.json").get_json()["paths"]["/metrics"]["get"]
    assert documented["security"] == [{"bearer": []}]
    assert {"401", "403"} <= set(documented["responses"])
    opened = public.get("/openapi.json").get_json()["paths"]["/metrics"]["get"]
    assert opened["security"] == []
    off = make_app(metrics={"enabled": False}).test_client()
    assert off.get("/metrics", headers=AUTH).status_code == 404


def test_two_workers_are_counted_together_and_logs_are_json(
    settings: Settings, engine: Engine, featurizer: Featurizer, data_dir: Path
) -> None:
    factory = make_session_factory(engine)
    records = ingest_corpus(factory, featurizer, data_dir)
    env = server_env(settings, RECENGINE_LOG__FORMAT="json", RECENGINE_LOG__ACCESS="true")
    args = ["serve", "--port", "0", "--workers", "2", "--threads", "2"]
    with served(args, env) as server:
        from_every_worker(server.url, "/api/v1/health", 2, lambda r: r.status == 200)
        path = f"/api/v1/articles/{records[0]['id']}/related"
        workers: list[int] = []
        while len(workers) < 20 or len(set(workers)) < 2:  # both must have answered some
            workers.append(call(server.url, "GET", path).worker)
            assert len(workers) < 400, "one worker took every connection"
        sent = len(workers)
        counts = set()
        for _ in range(6):  # scrapes reach either worker: each must see all 20
            reply = call(server.url, "GET", "/metrics", headers=AUTH)
            assert reply.status == 200
            found = scrape(reply.body.decode())
            counts.add(
                value(
                    found,
                    "recengine_http_request_duration_seconds_count",
                    endpoint=RELATED,
                    method="GET",
                    status="200",
                )
            )
        assert counts == {float(sent)}
        assert value(found, "recengine_index_articles", kind="related") == len(records)
        # each worker's collector ran its first full collection (recengine.web.server.collector)
        assert value(found, "recengine_gc_full_collection_seconds_count") >= 2
    lines = [json.loads(line) for line in server.log if line.startswith("{")]
    access = [x for x in lines if x.get("type") == "access" and x["path"] == path]
    assert len(access) == sent and {x["status"] for x in access} == {200}
    assert {x["pid"] for x in access} == set(workers)
    assert all(x["duration_ms"] > 0 and x["bytes"] > 0 for x in access)
    assert any("Listening at" in x["message"] for x in lines if x["logger"] == "gunicorn.error")
    assert not [line for line in server.log if line.startswith("[")]  # no text lines left
