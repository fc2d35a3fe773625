"""Dense article vectors and their nearest neighbours by inner product (FAISS): the dense
candidate source of related lists.

Array contracts: ids ``int64 (n,)`` ascending and unique; vectors ``float32 (n, d)``, rows of L2
norm 1 (or 0: an article none of whose terms the model knows), so inner product is cosine.
``d = 0`` is an index that is *off* (the version has no dense model): it keeps its ids, so that
the follower's size check holds, and finds nothing.

Layout, as the related index's segments (``index.layered``), so that a change never touches
what a query in another thread is reading: a **main** part (ids, vectors, an alive mask and a
FAISS index over its rows) and a **delta** (the rows added since the main part was built,
searched by brute force). :meth:`DenseIndex.with_changes` returns a new index sharing the main
part; :meth:`DenseIndex.compacted` builds a new main part of every live row.

FAISS: an exhaustive scan below ``ivf_min`` rows; from there an IVF index (inner product)
with ``nlist`` lists trained by k-means on a seeded sample, ``nprobe`` of them read per query:
sub-millisecond at 1M rows where a flat scan takes ~70 ms (``BENCHMARKS.md``). Both hold the
rows as float16 (``half``: ``IndexScalarQuantizer`` / ``IndexIVFScalarQuantizer`` QT_fp16, no
training, so a load is as deterministic as before; off: ``IndexFlatIP`` / ``IndexIVFFlat``): a
query reads half the bytes (at 1M, 64 dims, 32 of 1,024 lists: 0.46 against 0.79 ms; the scan
of 9,882 rows of 576 dimensions: 2.6 against 7.0 ms at load 6.5) and FAISS's copy of the
vectors takes half the memory. A few more rows than asked for are taken and re-scored exactly,
so the candidates are the same but for the rare row whose rounding moves it across the 100th
place (top-100 overlap 0.9995, the exact top 10 identical, ``BENCHMARKS.md``). IVF
candidates are approximate, and which ones a query finds depends on which rows sit in the
main part: the exact ranking scores every candidate from the stored vectors, so an answer
differs only where IVF missed a neighbour. Dead rows of the main part are excluded inside the
search (a bitmap selector), so a search never comes back short because of deletions.

Files (:meth:`DenseIndex.arrays`) hold the vectors, the alive mask, the delta, the centroids and
each main row's list, so a load rebuilds the FAISS index without training or assigning.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import faiss
import numpy as np
import numpy.typing as npt

from recengine.index.container import Arrays
from recengine.index.ids import IdRows
from recengine.rental import Rental

I64 = npt.NDArray[np.int64]
F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]

DEAD_SHARE = 5  # compact when more than 1/DEAD_SHARE of the main part is dead
MIN_DEAD = 1_000
TRAIN_PER_LIST = 64  # k-means sample: rows per list (FAISS warns below 39)
# values through numpy's exact inner products that cost what loading their kernel costs; a
# step of a fifth of that loads it at once
DOTS = Rental("recengine.index.dense_kernels", price=5_000_000, at_once=1_000_000)


@dataclass(frozen=True)
class DenseParams:
    """How the FAISS part is built (``[dense]`` settings).

    Attributes:
        ivf_min: rows from which the main part is an IVF index (below: exact flat).
        nlist: IVF lists; 0 = about ``sqrt(n)`` (a power of two, 64-4096).
        nprobe: lists read per query.
        half: the IVF lists hold float16 copies of the rows (False: float32, ``IndexIVFFlat``).
        delta_max_rows: rows outside the main part after which a compaction is due.
    """

    ivf_min: int = 50_000
    nlist: int = 0
    nprobe: int = 32
    half: bool = True
    delta_max_rows: int = 20_000

    def lists_for(self, n: int) -> int:
        if self.nlist:
            return self.nlist
        return int(min(4096, max(64, 2 ** round(math.log2(max(1.0, math.sqrt(n)))))))


@dataclass(frozen=True, eq=False)
class Main:
    """The main part: rows, their alive mask, the FAISS index over them (row = FAISS id)."""

    ids: I64
    vectors: F32
    alive: Bools
    centroids: F32  # (nlist, d); (0, d) for a flat index
    lists: I64  # (n,) each row's IVF list; (0,) for a flat index
    faiss_index: Any = field(repr=False)
    id_rows: IdRows = field(repr=False)  # rows by id; shared by the parts with these ids
    selector: Any = field(repr=False, default=None)  # alive rows, when some are dead
    _keep: Any = field(repr=False, default=None)  # what FAISS objects point into
    live: int = field(init=False)  # alive rows, counted once (every search asks: 0.4 ms at 1M)

    def __post_init__(self) -> None:
        object.__setattr__(self, "live", int(self.alive.sum()))


@dataclass(frozen=True, eq=False)
class DenseIndex:
    """Dense vectors of articles (see the module docstring). Immutable."""

    dims: int
    params: DenseParams
    main: Main
    delta_ids: I64
    delta_vectors: F32

    def __len__(self) -> int:
        return self.main.live + len(self.delta_ids)

    @cached_property
    def _delta_rows(self) -> IdRows:
        return IdRows(self.delta_ids)

    def search(self, query: F32, n: int) -> tuple[I64, F64]:
        """The ``n`` live rows of largest inner product with ``query`` (``float32 (d,)``):
        ids and their exact inner products (float64), best first, ties by smaller id."""
        if not self.dims or n <= 0 or not len(self):
            return np.zeros(0, np.int64), np.zeros(0)
        q = np.ascontiguousarray(query, dtype=np.float32).reshape(1, -1)
        q64 = q[0].astype(np.float64)
        m = self.main
        rows = np.zeros(0, np.int64)
        if m.live:
            kwargs = {}
            if m.selector is not None or m.lists.size:
                kwargs["params"] = _search_params(m, self.params.nprobe)
            # a few more than n: float16 rounding can only swap rows near the n-th place,
            # and the exact scores below put them back in order
            wanted = n + max(8, n // 8) if self.params.half else n
            _, found = m.faiss_index.search(q, min(wanted, len(m.ids)), **kwargs)
            rows = found[0][found[0] >= 0]
        ids = np.concatenate((m.ids[rows], self.delta_ids))
        vectors = np.concatenate((m.vectors[rows], self.delta_vectors))
        scores = dots(vectors, q64)  # exact, whatever FAISS rounded
        order = np.lexsort((ids, -scores))[:n]
        return ids[order], scores[order]

    def lookup(self, ids: I64) -> tuple[Bools, F32]:
        """Vectors of live ``ids`` (``float32 (len(ids), d)``; zero rows where not found)."""
        out = np.zeros((len(ids), self.dims), np.float32)
        found = np.zeros(len(ids), bool)
        for part_rows, vectors, alive in (
            (self.main.id_rows, self.main.vectors, self.main.alive),
            (self._delta_rows, self.delta_vectors, None),
        ):
            rows = part_rows.find(ids)
            hit = rows >= 0
            if alive is not None:
                hit[hit] = alive[rows[hit]]
            out[hit] = vectors[rows[hit]]
            found |= hit
        return found, out

    def with_changes(self, changed: I64, added_ids: I64, added: F32) -> DenseIndex:
        """This index without the ``changed`` ids (deleted or replaced) and with ``added``
        (ids among ``changed``, ascending) in the delta."""
        m = self.main
        rows = m.id_rows.find(changed)
        rows = rows[rows >= 0]
        main = m
        if len(rows) and m.alive[rows].any():
            alive = m.alive.copy()
            alive[rows] = False
            main = _with_alive(m, alive)
        keep = ~np.isin(self.delta_ids, changed)
        ids = np.concatenate((self.delta_ids[keep], added_ids))
        added_rows = added.reshape(len(added_ids), self.dims)
        vectors = np.concatenate((self.delta_vectors[keep], added_rows))
        order = np.argsort(ids, kind="stable")
        return DenseIndex(self.dims, self.params, main, ids[order], vectors[order])

    def compaction_due(self) -> bool:
        dead = len(self.main.ids) - self.main.live
        return len(self.delta_ids) > self.params.delta_max_rows or dead > max(
            MIN_DEAD, len(self.main.ids) // DEAD_SHARE
        )

    def compacted(self) -> DenseIndex:
        """Every live row in a new main part (IVF retrained when it is one)."""
        m = self.main
        ids = np.concatenate((m.ids[m.alive], self.delta_ids))
        vectors = np.concatenate((m.vectors[m.alive], self.delta_vectors))
        order = np.argsort(ids, kind="stable")
        return build_dense(ids[order], vectors[order], self.params, self.dims)

    def arrays(self) -> Arrays:
        m = self.main
        return {
            "ids": m.ids,
            "vectors": m.vectors,
            "alive": m.alive,
            "centroids": m.centroids,
            "lists": m.lists,
            "delta_ids": self.delta_ids,
            "delta_vectors": self.delta_vectors,
        }

    def describe(self) -> dict[str, Any]:
        m = self.main
        return {
            "dims": self.dims,
            "faiss": ("ivf" if m.lists.size else "flat") + ("-fp16" if self.params.half else ""),
            "ivf_lists": len(m.centroids),
            "delta_rows": len(self.delta_ids),
            "bytes": sum(a.nbytes for a in self.arrays().values()),
        }


def build_dense(ids: I64, vectors: F32, params: DenseParams, dims: int) -> DenseIndex:
    """The index of ``vectors`` (``float32 (n, dims)``) of ``ids`` (ascending), all in the
    main part."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(ids), dims)
    centroids = np.zeros((0, dims), np.float32)
    lists = np.zeros(0, np.int64)
    if dims and len(ids) >= max(params.ivf_min, 2):
        centroids = _train(vectors, params.lists_for(len(ids)))
        lists = _assign(centroids, vectors)
    alive = np.ones(len(ids), bool)
    main = make_main(np.asarray(ids, np.int64), vectors, alive, centroids, lists, params.half)
    return DenseIndex(dims, params, main, np.zeros(0, np.int64), np.zeros((0, dims), np.float32))


def dense_from_arrays(arrays: Arrays, params: DenseParams, dims: int) -> DenseIndex:
    """The index back from :meth:`DenseIndex.arrays` (FAISS rebuilt from them: copies).

    Raises:
        ValueError: missing arrays, or arrays that do not fit together.
    """
    try:
        ids, vectors, alive = arrays["ids"], arrays["vectors"], arrays["alive"]
        centroids, lists = arrays["centroids"], arrays["lists"]
        delta_ids, delta_vectors = arrays["delta_ids"], arrays["delta_vectors"]
    except KeyError as exc:
        raise ValueError(f"no {exc} array") from None
    n, nd = len(ids), len(delta_ids)
    problems = [
        name
        for name, ok in (
            ("ids", ids.dtype == np.int64 and bool(np.all(np.diff(ids) > 0))),
            ("vectors", vectors.dtype == np.float32 and vectors.shape == (n, dims)),
            ("alive", alive.dtype == np.bool_ and alive.shape == (n,)),
            ("centroids", centroids.dtype == np.float32 and centroids.shape[1:] == (dims,)),
            ("lists", lists.dtype == np.int64 and lists.shape in ((0,), (n,))),
            ("delta_ids", delta_ids.dtype == np.int64 and bool(np.all(np.diff(delta_ids) > 0))),
            ("delta_vectors", delta_vectors.shape == (nd, dims)),
        )
        if not ok
    ]
    if lists.size and (lists.min() < 0 or lists.max() >= len(centroids)):
        problems.append("lists out of range")
    if problems:
        raise ValueError(f"dense index arrays do not fit together: {', '.join(problems)}")
    main = make_main(ids, vectors, alive, centroids, lists, params.half)
    return DenseIndex(dims, params, main, delta_ids, np.asarray(delta_vectors, np.float32))


def make_main(ids: I64, vectors: F32, alive: Bools, centroids: F32, lists: I64, half: bool) -> Main:
    """A main part with its FAISS index (flat, or IVF from ``centroids`` and ``lists``; its
    codes in float16 when ``half``)."""
    dims = vectors.shape[1]
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    keep: list[Any] = [vectors]
    if not dims:
        index: Any = None
    elif not lists.size and half:  # float16 codes, searched exhaustively (no training)
        fp16, ip = faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT
        index = faiss.IndexScalarQuantizer(dims, fp16, ip)
        if len(vectors):
            index.add(vectors)
    elif not lists.size:
        index = faiss.IndexFlatIP(dims)
        if len(vectors):
            index.add(vectors)
    else:
        quantizer = faiss.IndexFlatIP(dims)
        quantizer.add(np.ascontiguousarray(centroids, dtype=np.float32))
        nlist, ip = len(centroids), faiss.METRIC_INNER_PRODUCT
        if half:  # QT_fp16 needs no training; by residual: measured faster at 1M
            fp16 = faiss.ScalarQuantizer.QT_fp16
            index = faiss.IndexIVFScalarQuantizer(quantizer, dims, nlist, fp16, ip, True)
        else:
            index = faiss.IndexIVFFlat(quantizer, dims, nlist, ip)
        index.is_trained = True
        rows = np.arange(len(vectors), dtype=np.int64)
        assigned = np.ascontiguousarray(lists, dtype=np.int64)
        index.add_core(
            len(vectors), faiss.swig_ptr(vectors), faiss.swig_ptr(rows), faiss.swig_ptr(assigned)
        )
        keep += [quantizer, rows, assigned]  # the IVF index points into the quantizer
    main = Main(ids, vectors, alive, centroids, lists, index, IdRows(ids), None, keep)
    return _with_alive(main, alive)


def _with_alive(m: Main, alive: Bools) -> Main:
    """``m`` with another alive mask (and the FAISS selector of its live rows)."""
    selector = None
    keep = list(m._keep or [])
    if not alive.all() and m.faiss_index is not None:
        bitmap = np.packbits(alive, bitorder="little")
        selector = faiss.IDSelectorBitmap(len(alive), faiss.swig_ptr(bitmap))
        keep.append(bitmap)
    return Main(
        m.ids, m.vectors, alive, m.centroids, m.lists, m.faiss_index, m.id_rows, selector, keep
    )


def _search_params(m: Main, nprobe: int) -> Any:
    p: Any
    if m.lists.size:
        p = faiss.SearchParametersIVF()
        p.nprobe = nprobe
    else:
        p = faiss.SearchParameters()
    if m.selector is not None:
        p.sel = m.selector
    return p


def _train(vectors: F32, nlist: int) -> F32:
    """k-means centroids (inner product) of a seeded sample of the rows."""
    dims = vectors.shape[1]
    nlist = min(nlist, len(vectors))
    rng = np.random.default_rng(0)
    take = min(len(vectors), TRAIN_PER_LIST * nlist)
    sample = vectors[np.sort(rng.choice(len(vectors), take, replace=False))]
    kmeans = faiss.Kmeans(dims, nlist, niter=20, seed=1234, spherical=True, verbose=False)
    kmeans.cp.min_points_per_centroid = 1
    kmeans.train(np.ascontiguousarray(sample))
    return np.ascontiguousarray(kmeans.centroids, dtype=np.float32)


def _assign(centroids: F32, vectors: F32) -> I64:
    """Each row's list: its centroid of largest inner product."""
    quantizer = faiss.IndexFlatIP(centroids.shape[1])
    quantizer.add(centroids)
    _, lists = quantizer.search(vectors, 1)
    return np.ascontiguousarray(lists[:, 0], dtype=np.int64)


def dots(vectors: F32, query: F64, rows: I64 | None = None) -> F64:
    """``float64 (n,)``: the inner product of each row of ``vectors`` (of ``vectors[rows]`` when
    given) with ``query``, summed row by row (the same value for a row whatever else is in
    ``vectors``: no BLAS blocking), in numpy or compiled (``index.dense_kernels``: the same
    floats), whichever pays in this process (``recengine.rental``)."""
    n = len(vectors) if rows is None else len(rows)
    compiled = DOTS.kernels(n * vectors.shape[1])
    if compiled is not None:
        at = np.arange(n, dtype=np.int64) if rows is None else np.asarray(rows, np.int64)
        out: F64 = compiled.dense_dots(vectors, at, np.asarray(query, np.float64))
        return out
    taken = vectors if rows is None else vectors[rows]
    return np.asarray(np.sum(taken.astype(np.float64) * query, axis=1), dtype=np.float64)
