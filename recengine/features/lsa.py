"""LSA: a dense semantic vector per article, learned from the corpus's own TF-IDF vectors.

Latent semantic analysis (Deerwester et al. 1990) is the truncated SVD of the document-term
matrix ``X ~ U S V^T``; a document's dense vector is its row of ``X V_d`` (= ``U_d S_d``), cut to
the ``d`` strongest directions, L2-normalised so that inner product is cosine. Two articles on
one topic that share few exact words (synonyms, a term and its abbreviation) are close in that
space where TF-IDF cosine sees only their few shared terms.

Fitting is memory-bounded: it reads a sample of at most ``sample`` stored vectors restricted to
the ``max_terms`` terms most documents of the sample use, and computes the SVD with the
randomized range finder of Halko, Martinsson & Tropp (2011, algorithm 4.4: ``q`` power
iterations with re-orthonormalisation, ``p = 10`` oversampling; :func:`orthonormal`), which
needs only products of the sparse matrix with thin dense matrices: O(sample x (d + p))
memory, whatever the corpus size. The fitted model is the term -> direction table ``V_d``
(``float32 (V, d)``); projecting any vector, including one ingested after the fit, is one
sparse-dense product, so the local and Spark engines (and a process that has just ingested an
article) compute the same vector from the same model bytes, to float32 rounding.

The sparse products are scipy's CSR products in float64 (memory: the matrix and the thin
dense factor, never one row per stored term and dimension), each output row computed from its
own vector alone: a vector projected in a batch of one equals the same vector projected in a
page of thousands, bit for bit (the derived dense index relies on it).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

OVERSAMPLING = 10


@dataclass(frozen=True, eq=False)
class LsaModel:
    """Term directions of a fitted LSA.

    Attributes:
        hashes: ``uint64 (V,)`` sorted term hashes (:func:`~recengine.features.hashing.term_hash`).
        components: ``float32 (V, d)`` row ``i`` = the direction of term ``hashes[i]``.
    """

    hashes: npt.NDArray[np.uint64]
    components: npt.NDArray[np.float32]

    @property
    def dims(self) -> int:
        return int(self.components.shape[1])

    def project(
        self,
        hashes: Sequence[npt.NDArray[np.uint64]],
        weights: Sequence[npt.NDArray[np.float32]],
    ) -> npt.NDArray[np.float32]:
        """Dense vectors of sparse ones: ``float32 (n, d)``, rows of norm 1 (0 when no term of
        the vector is in the model)."""
        if len(hashes) == 1:
            return self._project_one(hashes[0], weights[0])
        rows, cols, vals = _triplets(self.hashes, hashes, weights)
        used, local = np.unique(cols, return_inverse=True)  # only the terms these vectors use
        sub = self.components[used].astype(np.float64)
        out = _sparse_dense(rows, local.ravel(), vals, len(hashes), sub)
        return _unit_rows(out).astype(np.float32)

    def _project_one(
        self, hashes: npt.NDArray[np.uint64], weights: npt.NDArray[np.float32]
    ) -> npt.NDArray[np.float32]:
        """:meth:`project` of one vector (a related list's query, every request) without
        building a sparse matrix: 0.12 against 0.35 ms. Bit for bit the page's row: scipy's
        CSR product sums a row's terms in ascending column order, one float64 product at a
        time, and so does ``add.reduce`` down the rows of the terms in that order
        (``tests/features/test_lsa.py`` holds the two equal)."""
        at = np.minimum(np.searchsorted(self.hashes, hashes), max(len(self.hashes) - 1, 0))
        hit = self.hashes[at] == hashes if len(self.hashes) else np.zeros(len(hashes), bool)
        cols, vals = at[hit], weights[hit].astype(np.float64)
        order = np.argsort(cols, kind="stable")
        terms = self.components[cols[order]].astype(np.float64) * vals[order][:, None]
        z = np.add.reduce(terms, axis=0) if len(terms) else np.zeros(self.dims)
        return _unit_rows(z.reshape(1, -1)).astype(np.float32)

    def to_bytes(self) -> bytes:
        """A zlib stream (level 0: framed and checksummed, not deflated): ``<u4 V``, ``<u4 d``,
        hashes ``<u8``, components ``<f4`` (row-major)."""
        v, d = self.components.shape
        body = struct.pack("<II", v, d) + self.hashes.astype("<u8").tobytes()
        # stored, not deflated: float32 components shrink by 7 % for 0.5 s per 50,000 terms
        return zlib.compress(body + self.components.astype("<f4").tobytes(), 0)

    @classmethod
    def from_bytes(cls, blob: bytes) -> LsaModel:
        body = zlib.decompress(blob)
        v, d = struct.unpack_from("<II", body)
        if len(body) != 8 + 8 * v + 4 * v * d:
            raise ValueError(f"corrupt LSA model: {len(body)} bytes for {v} terms x {d} dims")
        hashes = np.frombuffer(body, "<u8", v, 8).astype(np.uint64)
        comp = np.frombuffer(body, "<f4", v * d, 8 + 8 * v).astype(np.float32).reshape(v, d)
        return cls(hashes, comp)


def fit_lsa(
    hashes: Sequence[npt.NDArray[np.uint64]],
    weights: Sequence[npt.NDArray[np.float32]],
    dims: int,
    max_terms: int = 50_000,
    power_iterations: int = 4,
    seed: int = 0,
    orthonormalize: Callable[[npt.NDArray[np.float64]], npt.NDArray[np.float64]] | None = None,
) -> LsaModel:
    """Fit on a sample of stored TF-IDF vectors (the caller draws the sample).

    Args:
        hashes, weights: the sample's vectors (``uint64`` / ``float32`` per vector).
        dims: ``d``, the dense dimension (at most ``min(len(sample), terms) - 1``).
        max_terms: vocabulary: the terms used by the most documents (at least two).
        power_iterations: ``q`` of the range finder (more: closer to the exact SVD).
        seed: the random test matrix; the same seed and sample give the same model.
        orthonormalize: the thin QR's ``Q`` (default :func:`orthonormal`; ``householder`` is
            the reference ``bench.lsa_fit`` compares it with).

    Raises:
        ValueError: ``dims`` is not positive or the sample is too small for it.
    """
    if dims < 1:
        raise ValueError(f"dims must be >= 1, got {dims}")
    from threadpoolctl import threadpool_limits

    # One BLAS thread: the products are thin (50,000 x 74); OpenBLAS's threads spin-wait for
    # each other on a busy machine (a reindex's workers beside it, another process): the fit's
    # ten factorisations took 3.9 s at load 5 on 2 cores, 0.85 s on one thread (BENCHMARKS.md,
    # issue 50 item 2)
    with threadpool_limits(limits=1, user_api="blas"):
        return _fit(hashes, weights, dims, max_terms, power_iterations, seed, orthonormalize)


def _fit(
    hashes: Sequence[npt.NDArray[np.uint64]],
    weights: Sequence[npt.NDArray[np.float32]],
    dims: int,
    max_terms: int,
    power_iterations: int,
    seed: int,
    orthonormalize: Callable[[npt.NDArray[np.float64]], npt.NDArray[np.float64]] | None,
) -> LsaModel:
    vocab = _vocabulary(hashes, max_terms)
    if min(len(hashes), len(vocab)) <= dims:
        raise ValueError(f"{len(hashes)} vectors over {len(vocab)} terms cannot give {dims} dims")
    rows, cols, vals = _triplets(vocab, hashes, weights)
    n, v, k = len(hashes), len(vocab), min(dims + OVERSAMPLING, len(vocab), len(hashes))
    rng = np.random.default_rng(seed)
    basis = orthonormalize or orthonormal

    def times(m: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:  # X @ m
        return _sparse_dense(rows, cols, vals, n, m)

    def t_times(m: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:  # X^T @ m
        return _sparse_dense(cols, rows, vals, v, m)

    q = basis(times(rng.standard_normal((v, k))))
    for _ in range(power_iterations):
        q = basis(times(basis(t_times(q))))
    # the SVD of Q^T X (k x V) from the thin QR of its transpose X^T Q = P R: with R = U S
    # W^T (k x k), Q^T X = W S (P U)^T, so its right singular vectors are P U
    c = t_times(q)
    p = basis(c)
    u, _, _ = np.linalg.svd(p.T @ c)  # singular values descending
    comp = p @ u[:, :dims]
    # the sign of a singular vector is arbitrary: fix it (largest entry positive) so that two
    # fits that agree up to sign store the same model
    flip = np.sign(comp[np.abs(comp).argmax(axis=0), np.arange(dims)])
    return LsaModel(vocab, (comp * flip).astype(np.float32))


def orthonormal(a: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """An orthonormal basis of the columns of the tall ``a`` (``float64 (m, k)``, ``m >= k``).

    CholeskyQR2 (Yamamoto et al. 2015): ``Q = A R^-1`` with ``R`` the Cholesky factor of
    ``A^T A``, twice; two matrix products of ``A`` and a ``k x k`` factorisation, where
    Householder QR (``numpy.linalg.qr``) walks the ``m`` rows in LAPACK panels: on the
    range finder's 50,000 x 74 matrices 0.05 against 1.7 s (``BENCHMARKS.md``). Once more
    Householder when ``A`` is (nearly) rank deficient: the Cholesky factorisation fails, or
    the result is not orthonormal to 1e-6.
    """
    q = a
    try:
        for _ in range(2):
            lower = np.linalg.cholesky(q.T @ q)
            q = q @ np.linalg.inv(lower.T)
    except np.linalg.LinAlgError:
        return householder(a)
    gram = q.T @ q
    np.fill_diagonal(gram, np.diagonal(gram) - 1.0)
    if not np.all(np.isfinite(gram)) or np.abs(gram).max() > 1e-6:
        return householder(a)
    return np.asarray(q)


def householder(a: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """The ``Q`` of LAPACK's Householder QR of ``a``: stable whatever its rank."""
    return np.asarray(np.linalg.qr(a)[0])


def _vocabulary(hashes: Sequence[npt.NDArray[np.uint64]], max_terms: int) -> npt.NDArray[np.uint64]:
    """The ``max_terms`` hashes in most vectors (at least 2), sorted; ties by hash."""
    if not hashes:
        return np.zeros(0, np.uint64)
    terms, df = np.unique(np.concatenate(hashes), return_counts=True)
    keep = df >= 2
    terms, df = terms[keep], df[keep]
    top = np.lexsort((terms, -df))[:max_terms]
    return np.sort(terms[top])


def _triplets(
    vocab: npt.NDArray[np.uint64],
    hashes: Sequence[npt.NDArray[np.uint64]],
    weights: Sequence[npt.NDArray[np.float32]],
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.float64]]:
    """(row, column, weight) of every term of the vectors that is in ``vocab``."""
    if not hashes or not len(vocab):
        empty = np.zeros(0, np.intp)
        return empty, empty, np.zeros(0)
    lengths = np.fromiter((len(h) for h in hashes), np.intp, len(hashes))
    flat = np.concatenate(hashes).astype(np.uint64)
    vals = np.concatenate(weights).astype(np.float64)
    rows = np.repeat(np.arange(len(hashes)), lengths)
    at = np.clip(np.searchsorted(vocab, flat), 0, len(vocab) - 1)
    hit = vocab[at] == flat
    return rows[hit], at[hit], vals[hit]


def _sparse_dense(
    rows: npt.NDArray[np.intp],
    cols: npt.NDArray[np.intp],
    vals: npt.NDArray[np.float64],
    n: int,
    m: npt.NDArray[np.float64],
) -> npt.NDArray[np.float64]:
    """``S @ m`` for the sparse ``S`` (``n`` rows) given by triplets (each position once).

    scipy is imported here, by the fit and by projections of several vectors at once: a
    related list projects one vector without it (:meth:`LsaModel._project_one`), and the
    import costs a serving process ~0.14 s of start-up."""
    import scipy.sparse as sp

    if not len(rows):
        return np.zeros((n, m.shape[1]))
    s = sp.csr_matrix((vals, (rows, cols)), shape=(n, m.shape[0]))
    return np.asarray(s @ m, dtype=np.float64)


def _unit_rows(z: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    norms = np.linalg.norm(z, axis=1, keepdims=True)
    return np.asarray(z / np.where(norms == 0, 1.0, norms))
