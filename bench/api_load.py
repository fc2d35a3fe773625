"""HTTP load on the related endpoint: throughput, p50/p99 latency and errors under gunicorn.

Data (``--corpus``), kept in a SQLite database and reused (``--db``), or in the server of
``--database-url`` (PostgreSQL, as in production: the servers learn of changes by
notification, and cache hits are then answered on the worker's event loop,
``web.server.http.hits``):

* ``synthetic`` (default): ``--articles`` articles (100,000) drawn from the tokens of the 2,529
  real documents of ../shared/data by ``bench.related_synthetic`` (the corpus of
  ``bench.related_speed``: mixtures of real articles of one category, a vocabulary that grows
  with the corpus), stored with their features as ingest + reindex would;
* ``real``: ``--articles`` (at most 2,529) of the real documents, drawn without replacement,
  ingested and reindexed: real text at real lengths;
* ``resampled``: the real documents themselves, resampled with replacement, ingested and
  reindexed: every article then has ~40 exact copies at 100k, a stress case for suppression
  that no real site looks like.

For each ``--servers`` worker class (``recengine``: recengine's worker, what ``recengine serve``
runs; ``gthread``: gunicorn's, the reference) and ``--workers`` count, gunicorn runs as a real
process with recengine's settings (``-c python:recengine.web.server.gunicorn_conf``) and an
open-loop generator (bench/loadgen.py, same machine) sends ``--rate`` requests/s for ``--seconds``
to random articles, after a warm-up. Side by side, in the same run:

* ``/api/v1/health`` at the same rate through the same server: the HTTP + gunicorn floor;
* the same requests through Flask's test client in this process, one at a time: the cost of
  the application alone, without sockets or workers.

Columns: answered and accepted (200) requests per second, latency of every answer, p99 of the
accepted ones ("ok p99": what overload does to the requests a server takes), the share
answered 503 (shed), errors (any other status, or no answer), and answers per worker process.

With ``--reference-env NAME=VALUE`` (repeatable), every server also runs with those settings as
the reference, alternating with the shipped ones ``--ab-rounds`` times (e.g.
``RECENGINE_WEB__GC_REFRESH_SECONDS=0``: the interpreter's garbage collector as it is). The
rows give each server's full garbage collections in the measured window (count, total pause).

With ``--feedback-rate N``, each server instead runs ``--rounds`` alternating rounds of the
related load alone and with N reader-feedback events per second beside it
(``bench.feedback_mix``): the related p99 with and without, and whether it moved by more than
10 %.

Usage::

    python -m bench.api_load [--articles 100000] [--workers 2 4] [--rate 200] [--seconds 30]
        [--servers recengine gthread] [--keepalive] [--feedback-rate 500 --rounds 3]
        [--hit-mix 0.9] [--conditional] [--reference-env NAME=VALUE --ab-rounds 2]

Cacheable answers (``recengine.web.api.answers``): ``--hit-mix H`` sends a share H of the requests
to 100 popular lists (cached after their first answer) and the rest to distinct lists (each
``(article, k)`` about once: misses computed in full), as a site's traffic with a few
articles on its front page; ``--conditional`` makes the generator a revalidating client
(``If-None-Match`` with the ETag it saw last for the path; 304s count as answers). The
server's own count of cache hits and misses (``/metrics``) is printed beside each row.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import multiprocessing
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import make_url, select

from bench import feedback_mix, loadgen, overload
from bench.corpus import real_docs, resample
from recengine.config import Settings, load_settings
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.full import reindex
from recengine.storage.db import make_engine, make_session_factory, transaction
from recengine.storage.migrate import upgrade
from recengine.storage.models import Article
from recengine.storage.rows.articles import count_live
from recengine.web import create_app

RESULTS = Path(__file__).with_name("results")
URL_LINE = re.compile(r" on (http://\S+/) ")
# bench.related_synthetic computes fingerprints from the top simhash_top_n terms and does not
# take 0 (issue 3's "all terms"); a cap above any article's term count means the same. The
# server gets the same settings (SERVER_ENV).
SYNTHETIC_OVERRIDES: dict[str, Any] = {"features": {"simhash_top_n": 100_000}}
SERVER_ENV = {"RECENGINE_FEATURES__SIMHASH_TOP_N": "100000", "RECENGINE_METRICS__PUBLIC": "true"}
HOT = 100  # popular lists of --hit-mix
ENDPOINTS = {
    "related": "/api/v1/articles/{id}/related?k=10",
    "article": "/api/v1/articles/{id}",
    "duplicates": "/api/v1/articles/{id}/duplicates",
}


def build(settings: Settings, db: Path | None, n: int, corpus: str) -> None:
    """Store ``n`` articles of ``corpus`` with their features, unless the database (the SQLite
    file ``db``, or the server of ``--database-url`` when ``db`` is None) already has them."""
    url = settings.resolved_database_url
    if db is None or db.exists():
        engine = make_engine(url)
        if db is None:
            upgrade(engine)
        with transaction(make_session_factory(engine)) as session:
            have = count_live(session=session)
        engine.dispose()
        where = db or make_url(url).render_as_string(hide_password=True)
        if have not in (0, n) or (db is not None and have != n):
            raise SystemExit(f"{where} holds {have} articles, not {n}: remove them")
        if have == n:
            print(f"reusing {where} ({n} articles)")
            return
    t0 = time.perf_counter()
    if corpus == "synthetic":
        if db is None:
            raise SystemExit("--corpus synthetic is written to SQLite only: leave --database-url")
        from bench.related_synthetic import write_database  # issue 4's generator

        write_database(db, settings, n)
    else:
        ingest_real(settings, n, resampled=corpus == "resampled")
    print(f"built {n} {corpus} articles in {time.perf_counter() - t0:.0f} s")


def ingest_real(settings: Settings, n: int, *, resampled: bool) -> None:
    engine = make_engine(settings.resolved_database_url)
    upgrade(engine)
    factory = make_session_factory(engine)
    featurizer = Featurizer(settings)
    docs = real_docs()
    if not resampled and n > len(docs):
        raise SystemExit(f"--corpus real has {len(docs)} documents: ask for at most that many")
    chosen = resample(docs, n) if resampled else random.Random(5).sample(docs, n)
    records = (d.record() for d in chosen)
    Ingester(factory, featurizer).ingest_records(records)
    reindex(factory=factory, featurizer=featurizer, batch_size=2_000)
    engine.dispose()


def sample_ids(settings: Settings, count: int, seed: int) -> list[str]:
    engine = make_engine(settings.resolved_database_url)
    with make_session_factory(engine)() as session:
        ids = list(session.scalars(select(Article.external_id).where(Article.deleted_at.is_(None))))
    engine.dispose()
    return random.Random(seed).sample(ids, min(count, len(ids)))


SERVER_PIDS: dict[str, int] = {}  # base URL -> the running server's master process
WORKER_CLASSES = {"recengine": "recengine.web.server.worker.Worker", "gthread": "gthread"}
LISTENING = re.compile(r"Listening at: (http://\S+)")


@contextmanager
def server(
    settings: Settings, workers: int, threads: int, kind: str, extra: dict[str, str] | None = None
) -> Iterator[str]:
    """gunicorn with recengine's settings (``-c python:recengine.web.server.gunicorn_conf``, what
    ``recengine serve`` runs) and the worker class ``kind``; yields its base URL."""
    env = {
        **os.environ,
        **SERVER_ENV,
        **(extra or {}),
        "RECENGINE_DATABASE_URL": settings.resolved_database_url,
        "RECENGINE_DATA_DIR": str(settings.data_dir),
    }
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "-c",
        "python:recengine.web.server.gunicorn_conf",
        "--bind",
        "127.0.0.1:0",
        "--workers",
        str(workers),
        "--threads",
        str(threads),
        "--worker-class",
        WORKER_CLASSES[kind],
        "recengine.web:create_app()",
    ]
    process = subprocess.Popen(
        command,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert process.stderr is not None
        for line in process.stderr:
            if match := LISTENING.search(line):
                threading.Thread(target=process.stderr.read, daemon=True).start()  # drain
                SERVER_PIDS[match.group(1)] = process.pid
                yield match.group(1)
                break
        else:
            raise SystemExit("the server did not start")
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


def in_process(settings: Settings, paths: list[str]) -> dict[str, float]:
    """The same requests through Flask's test client: the application's own cost. Run in a
    child process, so that no app (its index, its listener and feedback threads) is left in
    the generator's process beside the load it measures."""
    spawn = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=spawn) as pool:
        return pool.submit(_in_process, settings, paths).result()


def _in_process(settings: Settings, paths: list[str]) -> dict[str, float]:
    client = create_app(settings).test_client()
    for path in paths[:50]:
        client.get(path)  # warm caches, load models and indexes
    timings = []
    result = loadgen.Result(scheduled=len(paths))
    for path in paths:
        t0 = time.perf_counter()
        status = client.get(path).status_code
        timings.append(time.perf_counter() - t0)
        result.statuses[status] = result.statuses.get(status, 0) + 1
    result.latencies, result.duration = timings, sum(timings)
    result.ok_latencies = timings
    return result.summary()


def load(base: str, paths: list[str], rate: float, args: argparse.Namespace) -> dict[str, Any]:
    common: dict[str, Any] = {
        "rate": rate,
        "keepalive": args.keepalive,
        "connections": args.connections,
        "etags": {} if args.conditional else None,
        "timeout": args.timeout,
    }
    loadgen.run(base, paths, seconds=args.warmup, seed=1, **common)
    before = server_counts(base)
    cpu = feedback_mix.cpu_seconds(SERVER_PIDS[base])
    started = os.getloadavg()[0]

    def measured() -> dict[str, Any]:
        result = loadgen.run(base, paths, seconds=args.seconds, seed=2, **common)
        return result.summary() | {"answered": len(result.latencies)}

    health = None
    if args.health_rate:
        summary, health = overload.health_beside(base, args.health_rate, args.seconds, measured)
    else:
        summary = measured()
    cpu = feedback_mix.cpu_seconds(SERVER_PIDS[base]) - cpu
    after = server_counts(base)
    for part in ("cache", "gc"):
        was = before[part]
        summary[part] = {k: v - was.get(k, 0) for k, v in after[part].items()}
    # the server's CPU (master and workers, /proc) per answered request: what a request costs
    # whatever else the machine is doing
    summary["server_cpu_us"] = cpu / max(1, summary.pop("answered")) * 1e6
    summary["load_average"] = (started, os.getloadavg()[0])
    if health is not None:
        summary["health_beside"] = health
    return summary


def path_of(endpoint: str, article_id: str) -> str:
    """The request path of ``endpoint`` for an article, its id percent-encoded (real ids hold
    non-ASCII file names: sent raw they were answered 400 and counted as errors)."""
    return ENDPOINTS[endpoint].format(id=quote(article_id))


def mixed_paths(ids: list[str], hit_mix: float) -> list[str]:
    """``hit_mix`` of the draws on ``HOT`` popular lists, the rest on distinct ``(id, k)``."""
    hot = [path_of("related", i) for i in ids[:HOT]]
    if hit_mix >= 1:
        return hot
    cold = [f"/api/v1/articles/{quote(i)}/related?k={k}" for i in ids[HOT:] for k in range(5, 30)]
    repeat = max(1, round(hit_mix / (1 - hit_mix) * len(cold) / len(hot)))
    return cold + hot * repeat


def server_counts(base: str) -> dict[str, dict[str, float]]:
    """The server's cache results (``recengine_cache_requests_total``) and its full garbage
    collections (``recengine_gc_full_collection_seconds``: count, seconds), summed over
    workers."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(base.rstrip("/") + "/metrics", timeout=30) as reply:
        text = reply.read().decode()
    cache: dict[str, float] = {}
    gc = {"count": 0.0, "seconds": 0.0}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "recengine_cache_requests_total":
                result = sample.labels["result"]
                cache[result] = cache.get(result, 0) + sample.value
            elif sample.name == "recengine_gc_full_collection_seconds_count":
                gc["count"] += sample.value
            elif sample.name == "recengine_gc_full_collection_seconds_sum":
                gc["seconds"] += sample.value
    return {"cache": cache, "gc": gc}


def setting(pair: str) -> tuple[str, str]:
    """``NAME=VALUE`` of ``--server-env`` / ``--reference-env`` (argparse says what is wrong)."""
    name, sep, value = pair.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"{pair!r} is not NAME=VALUE")
    return name, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--articles", type=int, default=100_000)
    parser.add_argument("--corpus", choices=["synthetic", "real", "resampled"], default="synthetic")
    parser.add_argument("--db", type=Path, default=None)
    parser.add_argument(
        "--database-url",
        default=None,
        help="serve from this database (PostgreSQL: change notifications, as in production)"
        " instead of a SQLite file; --corpus real or resampled is ingested there when empty",
    )
    parser.add_argument(
        "--server-env",
        action="append",
        type=setting,
        default=[],
        metavar="NAME=VALUE",
        help="a setting for the servers, e.g. RECENGINE_INDEX__SYNC_INTERVAL_S=1 (repeatable)",
    )
    parser.add_argument(
        "--reference-env",
        action="append",
        type=setting,
        default=[],
        metavar="NAME=VALUE",
        help="also run every server with these settings, as the reference beside the shipped"
        " ones (alternating, --ab-rounds times), e.g. RECENGINE_WEB__GC_REFRESH_SECONDS=0",
    )
    parser.add_argument("--ab-rounds", type=int, default=1, help="with --reference-env")
    parser.add_argument("--endpoint", choices=sorted(ENDPOINTS), default="related")
    parser.add_argument("--workers", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument(
        "--rate", type=float, nargs="+", default=[200.0], help="offered rates (req/s) to run"
    )
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--warmup", type=float, default=10.0)
    parser.add_argument(
        "--keepalive", action="store_true", help="reuse 64 connections (default: one per request)"
    )
    parser.add_argument(
        "--connections",
        type=int,
        default=64,
        help="requests in flight at most (more wait in the generator, their latency counting)",
    )
    parser.add_argument(
        "--timeout", type=float, default=None, help="a request unanswered this long is an error"
    )
    parser.add_argument(
        "--health-rate",
        type=float,
        default=0.0,
        help="health checks/s beside each load (5 s timeout, from another process; 0: none)",
    )
    parser.add_argument(
        "--flood",
        type=int,
        default=0,
        help="instead of a load: this many idle and slow connections opened at once and held"
        " for --seconds, health checks at --health-rate (10 when 0) beside them",
    )
    parser.add_argument("--hit-mix", type=float, default=None, help="share on popular lists")
    parser.add_argument("--conditional", action="store_true", help="send If-None-Match")
    parser.add_argument(
        "--servers",
        nargs="+",
        choices=sorted(WORKER_CLASSES),
        default=["recengine"],
        help="worker classes to run side by side (gthread: the reference)",
    )
    parser.add_argument(
        "--feedback-rate",
        type=float,
        default=0.0,
        help="reader-feedback events/s beside the related load (bench.feedback_mix); 0: off",
    )
    parser.add_argument("--feedback-batch", type=int, default=5, help="events per beacon")
    parser.add_argument("--rounds", type=int, default=3, help="with --feedback-rate")
    parser.add_argument(
        "--feedback-keepalive",
        type=int,
        default=0,
        help="beacons over this many kept-alive connections, as a browser's sendBeacon reuses"
        " the widget's connection (0: a new connection per beacon)",
    )
    parser.add_argument(
        "--control",
        action="store_true",
        help="each round also sends the beacons to a sink instead (bench.feedback_mix.sink):"
        " the generator's own share of the change",
    )
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the cleanups on kill
    RESULTS.mkdir(exist_ok=True)
    db: Path | None = None
    if args.database_url:
        where = {
            "database_url": args.database_url,
            "data_dir": str(RESULTS / f"api_load_server_{args.corpus}_{args.articles}.data"),
        }
    else:
        db = (args.db or RESULTS / f"api_load_{args.corpus}_{args.articles}.db").resolve()
        where = {"database_url": f"sqlite:///{db}", "data_dir": str(db.parent / f"{db.stem}.data")}
    settings = load_settings(where | SYNTHETIC_OVERRIDES)
    SERVER_ENV.update(dict(args.server_env))
    build(settings, db, args.articles, args.corpus)
    ids = sample_ids(settings, 2_000, seed=11)
    paths = [path_of(args.endpoint, i) for i in ids]
    if args.feedback_rate:
        report(args, feedback_rounds(settings, args, paths, ids))
        return
    if args.flood:
        report(args, flood_rounds(settings, args))
        return
    if args.hit_mix is not None:
        paths = mixed_paths(ids, args.hit_mix)
    print(HEADER)
    rows: dict[str, Any] = {}
    sample = random.Random(3).sample(paths, min(len(paths), 2_000))
    add(rows, "in-process (test client, 1 thread)", in_process(settings, sample))
    reference = dict(args.reference_env)
    variants = [("reference ", reference), ("", {})] * args.ab_rounds if reference else [("", {})]
    for kind in args.servers:
        for workers in args.workers:
            for n, (label, extra) in enumerate(variants):
                run = f" #{n // 2 + 1}" if reference and args.ab_rounds > 1 else ""
                with server(settings, workers, args.threads, kind, extra) as base:
                    for rate in args.rate:
                        name = f"{label}{kind}: {args.endpoint}, {workers}w, {rate:.0f}/s{run}"
                        found = load(base, paths, rate, args)
                        add(rows, name, found)
                        if "health_beside" in found:
                            beside = f"  health beside ({workers}w, {rate:.0f}/s{run})"
                            add(rows, beside, found["health_beside"])
                    top = max(args.rate)
                    if not args.health_rate:  # else measured beside the load
                        add(
                            rows,
                            f"{label}{kind}: health, {workers}w, {top:.0f}/s{run}",
                            load(base, ["/api/v1/health"], top, args),
                        )
    if reference:
        print("reference: " + " ".join(f"{k}={v}" for k, v in args.reference_env))
    report(args, rows)


def flood_rounds(settings: Settings, args: argparse.Namespace) -> dict[str, Any]:
    """``--flood``: per server, the connections opened at once and the health checks beside."""
    rows: dict[str, Any] = {}
    rate = args.health_rate or 10.0
    for kind in args.servers:
        for workers in args.workers:
            with server(settings, workers, args.threads, kind) as base:
                before = os.getloadavg()[0]
                found = overload.flooded(base, args.flood, args.seconds, rate)
                found["load_average"] = (before, os.getloadavg()[0])
                name = f"{kind}, {workers}w: {args.flood} connections, health {rate:g}/s"
                rows[name] = found
                health, flood = found["health"], found["flood"]
                answered = health["error_kinds"].get("200", 0) / max(1, health["requests"])
                print(
                    f"{name}: health answered {answered:.1%} of {health['requests']} (p50 "
                    f"{health['p50_ms']:.1f} ms, p99 {health['p99_ms']:.1f} ms, max "
                    f"{health['max_ms']:.1f} ms, {health['error_kinds']}); flood: opened "
                    f"{flood['opened']} (at most {flood['open_at_most']} at once), server "
                    f"answers {flood['answers']}, connect errors {flood['connect_errors']}; "
                    f"load average {before:.2f} -> {found['load_average'][1]:.2f}",
                    flush=True,
                )
    return rows


def feedback_rounds(
    settings: Settings, args: argparse.Namespace, paths: list[str], ids: list[str]
) -> dict[str, Any]:
    """The related load alone and with feedback beside it, per server (see the docstring)."""
    common = {"keepalive": args.keepalive, "connections": args.connections}
    beacon_common = common
    if args.feedback_keepalive:
        beacon_common = {"keepalive": True, "connections": args.feedback_keepalive}
    bodies = feedback_mix.beacons(ids, args.feedback_batch)
    beacons_rps = args.feedback_rate / args.feedback_batch
    with_limits = settings.model_copy(
        update={
            "feedback": settings.feedback.model_copy(
                update={"client_rate": 1e6, "client_burst": 10**6}
            )
        }
    )
    costs = feedback_mix.cpu_costs(create_app(with_limits), paths, bodies, 500, 100)
    share = costs["beacon_cpu_ms"] * beacons_rps / 1e3
    print(
        f"in-process CPU per request, one at a time: related {costs['related_cpu_ms']:.2f} ms, "
        f"beacon of {args.feedback_batch} events {costs['beacon_cpu_ms']:.2f} ms (each its own "
        f"group commit: the upper bound); {beacons_rps:.0f} beacons/s at that cost = {share:.0%}"
        " of a core",
        flush=True,
    )
    rows: dict[str, Any] = {"in-process": costs}
    for kind in args.servers:
        for workers in args.workers:
            with (
                server(settings, workers, args.threads, kind, feedback_mix.FEEDBACK_ENV) as base,
                feedback_mix.Sink() if args.control else nullcontext(None) as sink,
            ):
                for rate in args.rate:
                    loadgen.run(base, paths, rate=rate, seconds=args.warmup, seed=1, **common)
                    loadgen.run(
                        base, bodies, rate=beacons_rps, seconds=args.warmup, **beacon_common
                    )
                    streams = feedback_mix.Streams(
                        base, paths, bodies, rate, beacons_rps, args.seconds, common, beacon_common
                    )
                    found = feedback_mix.compare(streams, args.rounds, SERVER_PIDS[base], sink)
                    name = f"{kind}, {workers}w, related {rate:.0f}/s"
                    rows[name] = found
                    print(feedback_mix.describe(name, found, args.feedback_batch), flush=True)
    return rows


HEADER = (
    f"{'':48} {'rps':>6} {'ok rps':>6} {'p50 ms':>7} {'p99 ms':>8} {'max ms':>8} "
    f"{'ok p99':>8} {'shed':>6} {'errors':>6}  answers per worker"
)


def add(rows: dict[str, Any], name: str, r: dict[str, Any]) -> None:
    rows[name] = r
    spread = "/".join(str(n) for n in r.get("workers", {}).values()) or "-"
    cache = r.get("cache") or {}
    served = sum(cache.values())
    hits = f"  cache hits {cache.get('hit', 0) / served:.0%} of {served:.0f}" if served else ""
    if "server_cpu_us" in r:
        hits += f"; server CPU {r['server_cpu_us']:.0f} us/request"
    if r.get("gc"):
        hits += f"; full GCs {r['gc']['count']:.0f} ({r['gc']['seconds'] * 1e3:.0f} ms)"
    by_status = r.get("p99_ms_by_status") or {}
    if "304" in by_status:  # revalidated hits apart from computed lists
        hits += "; p99 " + ", ".join(f"{k} {v:.1f} ms" for k, v in by_status.items())
    if r.get("shed_share"):
        hits += f"; 503s with Retry-After {r.get('shed_with_retry_after', 0)}"
    if "load_average" in r:
        hits += "; load {:.2f} -> {:.2f}".format(*r["load_average"])
    print(
        f"{name:48} {r['throughput_rps']:6.1f} {r['ok_rps']:6.1f} {r['p50_ms']:7.2f} "
        f"{r['p99_ms']:8.2f} {r['max_ms']:8.1f} {r['ok_p99_ms']:8.2f} "
        f"{r['shed_share']:6.1%} {r['errors']:6d}  {spread}{hits}",
        flush=True,
    )


def report(args: argparse.Namespace, rows: dict[str, Any]) -> None:
    load_avg = os.getloadavg()
    print(
        f"{args.endpoint} for {args.seconds:.0f} s per rate, {args.articles} {args.corpus} "
        f"articles, {'keep-alive' if args.keepalive else 'a connection per request'}; "
        f"load average after: {load_avg[0]:.2f} {load_avg[1]:.2f} {load_avg[2]:.2f}"
    )
    RESULTS.mkdir(exist_ok=True)
    mode = "_feedback" if args.feedback_rate else f"_flood{args.flood}" if args.flood else ""
    mix = f"_mix{args.hit_mix}" if args.hit_mix is not None else ""
    out = RESULTS / f"api_load_{args.endpoint}{mode}_{args.corpus}_{args.articles}{mix}.json"
    out.write_text(json.dumps({"args": vars(args) | {"db": str(args.db)}, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
