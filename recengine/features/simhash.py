"""64-bit weighted simhash (Charikar 2002; Manku, Jain & Das Sarma, WWW 2007) and Hamming distance.

For a document with features f_j of weight w_j and 64-bit hashes h_j::

    s_i = sum_j (+w_j if bit i of h_j is 1 else -w_j)      for i = 0..63
    fingerprint bit i = 1  iff  s_i > 0

Bit i is ``(h >> i) & 1``. Documents whose fingerprints differ in few bits share most of their
heavy features. The batch version computes all ``s`` of a block of documents with one batched
matrix product of weights and hash bits; it equals the plain per-feature loop
bit for bit (``tests/features/test_simhash.py``) and the PyPI ``simhash`` package given the same
hashes and weights (``bench/features.py``).

Array contracts: feature hashes ``uint64``, weights ``float32``/``float64``, fingerprints
``uint64 (n,)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

BITS = 64
_CHUNK_FEATURES = 65_536  # padded features per block: bounds memory at 65536 * 64 * 8 bytes
_POPCOUNT8 = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def simhash_many(
    hashes: Sequence[npt.NDArray[np.uint64]], weights: Sequence[npt.NDArray[np.floating]]
) -> npt.NDArray[np.uint64]:
    """Fingerprints of many documents at once.

    Args:
        hashes: per document, ``uint64 (m_i,)`` feature hashes.
        weights: per document, ``(m_i,)`` feature weights (same length as its hashes).

    Returns:
        ``uint64 (n,)`` fingerprints; a document with no features gets 0.

    Raises:
        ValueError: the two sequences or one document's arrays differ in length.
    """
    if len(hashes) != len(weights):
        raise ValueError(f"{len(hashes)} hash arrays but {len(weights)} weight arrays")
    sizes = np.fromiter((len(h) for h in hashes), dtype=np.int64, count=len(hashes))
    if any(len(h) != len(w) for h, w in zip(hashes, weights, strict=True)):
        raise ValueError("each document needs one weight per feature hash")
    out = np.zeros(len(hashes), dtype=np.uint64)
    if sizes.sum() == 0:
        return out
    # Documents go through in order of size, so each block is padded only to the width of its
    # own largest document (one long document no longer inflates every block of the batch):
    # a block takes as many documents as fit in _CHUNK_FEATURES padded features.
    order = np.argsort(sizes, kind="stable")
    ordered = np.maximum(sizes[order], 1)
    start = 0
    while start < len(order):
        room = np.arange(1, len(order) - start + 1) * ordered[start:]
        stop = start + max(1, int(np.searchsorted(room, _CHUNK_FEATURES, side="right")))
        rows = order[start:stop]
        out[rows] = _fingerprint_block(
            [hashes[i] for i in rows.tolist()],
            [weights[i] for i in rows.tolist()],
            sizes[rows],
            int(ordered[stop - 1]),
        )
        start = stop
    return out


def _fingerprint_block(
    hashes: Sequence[npt.NDArray[np.uint64]],
    weights: Sequence[npt.NDArray[np.floating]],
    sizes: npt.NDArray[np.int64],
    width: int,
) -> npt.NDArray[np.uint64]:
    """Documents padded to ``width`` features (weight 0), summed with one ``einsum``.

    ``s_i = sum_j (+w_j if bit else -w_j) = 2 * sum_j w_j * bit_ij - sum_j w_j``.
    Weights are float32 values summed in float64: such sums are exact, so the result does not
    depend on the order of summation (batch == per-feature loop, bit for bit).
    """
    n = len(sizes)
    rows = np.repeat(np.arange(n), sizes)
    cols = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    padded_h = np.zeros((n, width), dtype="<u8")
    padded_w = np.zeros((n, width), dtype=np.float64)
    padded_h[rows, cols] = np.concatenate([np.asarray(h, dtype=np.uint64) for h in hashes])
    padded_w[rows, cols] = np.concatenate(
        [np.asarray(w, dtype=np.float32) for w in weights]
    ).astype(np.float64)
    bits = np.unpackbits(padded_h.view(np.uint8).reshape(n, width, 8), axis=2, bitorder="little")
    # einsum reads the uint8 bits as they are; converting them to a float matrix first would
    # cost 20x the arithmetic (measured).
    ones = np.einsum("nw,nwb->nb", padded_w, bits, dtype=np.float64)  # (n, 64)
    sums = 2.0 * ones - padded_w.sum(axis=1)[:, None]
    packed = np.packbits(sums > 0, axis=1, bitorder="little")  # byte k holds bits 8k..8k+7
    return packed.view("<u8").ravel().astype(np.uint64)


def simhash(hashes: npt.NDArray[np.uint64], weights: npt.NDArray[np.floating]) -> int:
    """The fingerprint of one document, as a Python int in ``[0, 2**64)``."""
    return int(simhash_many([hashes], [weights])[0])


def hamming(a: int, b: int) -> int:
    """Number of differing bits of two 64-bit fingerprints."""
    return (a ^ b).bit_count()


def hamming_many(a: npt.NDArray[np.uint64], b: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint8]:
    """Element-wise Hamming distance of ``uint64`` arrays (broadcasting), ``uint8`` result."""
    x = np.bitwise_xor(np.asarray(a, dtype=np.uint64), np.asarray(b, dtype=np.uint64))
    if hasattr(np, "bitwise_count"):  # numpy >= 2.0
        counts: npt.NDArray[np.uint8] = np.bitwise_count(x)
        return counts
    return _popcount(x)


def _popcount(x: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint8]:
    as_bytes = np.ascontiguousarray(x).view(np.uint8).reshape(*x.shape, 8)
    counts: npt.NDArray[np.uint8] = _POPCOUNT8[as_bytes].sum(axis=-1, dtype=np.uint8)
    return counts
