"""The dense part's fit (``features.lsa.fit_lsa``) on real text: CholeskyQR2 against Householder.

Every reindex fits the LSA model on a sample of the stored TF-IDF vectors (at most
``dense.sample`` articles over the ``dense.max_terms`` most used terms), with the randomized
range finder: 2 q + 2 thin QRs of tall matrices (``V x (d + p)`` and ``n x (d + p)``) and a
final SVD. This bench fits the same sample with the default basis
(``lsa.orthonormal``, CholeskyQR2) and with the reference (``lsa.householder``, LAPACK's
Householder QR, what ``fit_lsa`` used before), in alternating rounds in one process, and
prints the medians side by side with the agreement of the two models: the largest difference
between the cosines of the sample's documents (``z z^T``) under each.

Data: ``--corpus real`` (the real documents of ../shared/data at their real lengths, as
``bench.api_load`` stores them) or ``resampled`` (paragraph mixes of them, for a sample as
large as ``dense.sample``).

    python -m bench.lsa_fit [--corpus real] [--articles 2529] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

import numpy as np

from bench.api_load import RESULTS, build
from recengine.config import load_settings
from recengine.features.lsa import fit_lsa, householder, orthonormal
from recengine.pipeline.reindex.dense_fit import sample_ids, sample_vectors
from recengine.storage.db import make_engine, make_session_factory
from recengine.storage.state import read_state


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", choices=["real", "resampled"], default="real")
    parser.add_argument("--articles", type=int, default=2_529)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    RESULTS.mkdir(exist_ok=True)
    db = (RESULTS / f"api_load_{args.corpus}_{args.articles}.db").resolve()
    settings = load_settings(
        {"database_url": f"sqlite:///{db}", "data_dir": str(db.parent / f"{db.stem}.data")}
    )
    build(settings, db, args.articles, args.corpus)
    factory = make_session_factory(make_engine(settings.resolved_database_url))
    with factory() as session:
        version = read_state(session=session).active_model_version
    if version is None:
        raise SystemExit(f"{db} has no fitted model: remove it")
    dense = settings.dense
    ids = sample_ids(factory, version, args.articles, dense.sample)
    hashes, weights = sample_vectors(factory, version, ids)
    fit: dict[str, Any] = {
        "dims": dense.dims,
        "max_terms": dense.max_terms,
        "power_iterations": dense.power_iterations,
    }
    print(
        f"{len(ids)} sampled vectors of {args.articles} {args.corpus} articles, d = {dense.dims}, "
        f"q = {dense.power_iterations}; load average {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    times: dict[str, list[float]] = {"orthonormal": [], "householder": []}
    models = {}
    for _ in range(args.rounds):
        for name, basis in (("orthonormal", orthonormal), ("householder", householder)):
            start = time.perf_counter()
            models[name] = fit_lsa(hashes, weights, orthonormalize=basis, **fit)
            times[name].append(time.perf_counter() - start)
    z = {name: m.project(hashes[:2_000], weights[:2_000]) for name, m in models.items()}
    cos = {name: v.astype(np.float64) @ v.T.astype(np.float64) for name, v in z.items()}
    diff = np.abs(cos["orthonormal"] - cos["householder"])
    terms = len(models["orthonormal"].hashes)
    for name, runs in times.items():
        print(
            f"{name:12} fit median {statistics.median(runs):7.3f} s  "
            f"(runs {', '.join(f'{t:.3f}' for t in runs)})"
        )
    ratio = statistics.median(times["householder"]) / statistics.median(times["orthonormal"])
    print(
        f"householder / orthonormal: {ratio:.1f}x; {terms} terms; cosines of "
        f"{len(diff)} documents: largest difference {diff.max():.2e}, mean {diff.mean():.2e}; "
        f"load average after {os.getloadavg()[0]:.2f}"
    )


if __name__ == "__main__":
    main()
