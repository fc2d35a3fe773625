"""LSA (features/lsa.py) against numpy's exact SVD, and its projection contract."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given
from hypothesis import strategies as st

from recengine.features.lsa import LsaModel, fit_lsa, householder, orthonormal

Vectors = tuple[list[npt.NDArray[np.uint64]], list[npt.NDArray[np.float32]]]


def low_rank_corpus(n: int = 400, terms: int = 120, rank: int = 6, seed: int = 2) -> Vectors:
    """Sparse non-negative documents mixing ``rank`` topics (a decaying spectrum, as text has)."""
    rng = np.random.default_rng(seed)
    topics = rng.random((rank, terms)) ** 4
    mix = rng.dirichlet(np.full(rank, 0.3), n) * np.linspace(3, 1, rank)
    dense = mix @ topics * (rng.random((n, terms)) < 0.5)
    hashes, weights = [], []
    for row in dense:
        cols = np.flatnonzero(row > 0.01)
        w = row[cols] / np.linalg.norm(row[cols])
        hashes.append((cols.astype(np.uint64) * 1_000_003 + 17) % (1 << 63))
        weights.append(w.astype(np.float32))
    return hashes, weights


def exact(
    hashes: list[npt.NDArray[np.uint64]],
    weights: list[npt.NDArray[np.float32]],
    vocab: npt.NDArray[np.uint64],
    dims: int,
) -> npt.NDArray[np.float64]:
    x = np.zeros((len(hashes), len(vocab)))
    for i, (h, w) in enumerate(zip(hashes, weights, strict=True)):
        at = np.searchsorted(vocab, h)
        ok = (at < len(vocab)) & (vocab[np.minimum(at, len(vocab) - 1)] == h)
        x[i, at[ok]] = w[ok]
    _, _, vt = np.linalg.svd(x, full_matrices=False)
    z = x @ vt[:dims].T
    return z / np.linalg.norm(z, axis=1, keepdims=True)


def test_projection_equals_the_exact_truncated_svd_up_to_sign() -> None:
    hashes, weights = low_rank_corpus()
    model = fit_lsa(hashes, weights, dims=6, power_iterations=8)
    z = model.project(hashes, weights)
    assert z.dtype == np.float32 and z.shape == (400, 6)
    np.testing.assert_allclose(np.linalg.norm(z, axis=1), 1.0, atol=1e-5)
    ref = exact(hashes, weights, model.hashes, 6)
    # the same cosines between documents (signs and rotations inside the subspace cancel)
    np.testing.assert_allclose(z @ z.T, ref @ ref.T, atol=1e-3)
    # the default 4 power iterations: the strongest directions as exactly
    model = fit_lsa(hashes, weights, dims=3)
    z, ref = model.project(hashes, weights), exact(hashes, weights, model.hashes, 3)
    np.testing.assert_allclose(z @ z.T, ref @ ref.T, atol=2e-3)


@pytest.mark.parametrize("scale", [1.0, 1e-3, 1e4])
def test_orthonormal_spans_what_householder_spans(scale: float) -> None:
    rng = np.random.default_rng(5)
    a = rng.standard_normal((3_000, 40)) @ np.diag(np.geomspace(1, 1e-3, 40)) * scale
    q, ref = orthonormal(a), householder(a)
    np.testing.assert_allclose(q.T @ q, np.eye(40), atol=1e-10)
    np.testing.assert_allclose(ref @ (ref.T @ q), q, atol=1e-10)  # the same column space
    np.testing.assert_allclose(q @ (q.T @ a), a, atol=1e-10 * scale)


@pytest.mark.parametrize("kind", ["repeated column", "zero column", "tiny column"])
def test_orthonormal_of_a_rank_deficient_matrix_is_householder_s(kind: str) -> None:
    """Duplicate documents or terms make the range finder's matrices (nearly) rank deficient:
    the Cholesky factorisation fails or loses orthogonality, and Householder QR answers."""
    a = np.random.default_rng(6).standard_normal((500, 12))
    a[:, 7] = {"repeated column": a[:, 3], "zero column": 0.0, "tiny column": a[:, 3] + 1e-12}[kind]
    q = orthonormal(a)
    np.testing.assert_array_equal(q, householder(a))
    np.testing.assert_allclose(q.T @ q, np.eye(12), atol=1e-10)


def test_the_fit_is_the_householder_fit() -> None:
    """The fast basis changes the model by rounding only: the same cosines between documents."""
    hashes, weights = low_rank_corpus(n=600, terms=300, rank=12, seed=4)
    fast = fit_lsa(hashes, weights, dims=8).project(hashes, weights)
    ref = fit_lsa(hashes, weights, dims=8, orthonormalize=householder).project(hashes, weights)
    np.testing.assert_allclose(fast @ fast.T, ref @ ref.T, atol=1e-5)


def test_same_seed_same_model_and_bytes_round_trip() -> None:
    hashes, weights = low_rank_corpus()
    a = fit_lsa(hashes, weights, dims=5, seed=7)
    b = fit_lsa(hashes, weights, dims=5, seed=7)
    assert np.array_equal(a.components, b.components) and np.array_equal(a.hashes, b.hashes)
    back = LsaModel.from_bytes(a.to_bytes())
    assert np.array_equal(back.components, a.components) and back.dims == 5
    with pytest.raises(ValueError, match="corrupt"):
        LsaModel.from_bytes(__import__("zlib").compress(a.to_bytes()[:-1]))


def test_a_new_vector_is_projected_like_a_fitted_one() -> None:
    hashes, weights = low_rank_corpus()
    model = fit_lsa(hashes[:300], weights[:300], dims=6)
    one = model.project(hashes[350:351], weights[350:351])  # not in the fit: projected alone
    batch = model.project(hashes[300:], weights[300:])
    assert np.array_equal(one[0], batch[50])  # bit for bit: rows are computed alone
    unknown = model.project([np.array([5], np.uint64)], [np.array([1.0], np.float32)])
    assert np.array_equal(unknown, np.zeros((1, 6), np.float32))  # no known term: zero vector


_MODEL = fit_lsa(*low_rank_corpus(), dims=6)


@given(
    st.lists(
        st.lists(
            st.tuples(st.integers(0, 130), st.integers(1, 10**6).map(lambda i: i / 1e6)),
            max_size=60,
            unique_by=lambda t: t[0],
        ),
        min_size=1,
        max_size=8,
    )
)
def test_one_vector_is_projected_bit_for_bit_as_in_a_page(
    docs: list[list[tuple[int, float]]],
) -> None:
    # Columns past the corpus's 120 terms: hashes the model does not know; any order of terms.
    vectors = [
        (
            np.array([(c * 1_000_003 + 17) % (1 << 63) for c, _ in doc], np.uint64),
            np.array([w for _, w in doc], np.float32),
        )
        for doc in docs
    ]
    page = _MODEL.project([h for h, _ in vectors], [w for _, w in vectors])
    for row, (h, w) in zip(page, vectors, strict=True):
        assert np.array_equal(_MODEL.project([h], [w])[0], row)


def test_vocabulary_is_the_most_used_terms() -> None:
    hashes, weights = low_rank_corpus()
    model = fit_lsa(hashes, weights, dims=4, max_terms=30)
    df = {int(h): 0 for h in np.unique(np.concatenate(hashes))}
    for h in hashes:
        for t in h.tolist():
            df[int(t)] += 1
    top = sorted(df, key=lambda t: (-df[t], t))[:30]
    assert model.hashes.tolist() == sorted(top)


@pytest.mark.parametrize("dims", [0, 400])
def test_bad_dimensions(dims: int) -> None:
    hashes, weights = low_rank_corpus()
    with pytest.raises(ValueError):
        fit_lsa(hashes, weights, dims=dims)


def test_the_fit_runs_on_one_blas_thread() -> None:
    """The fit's products are thin: OpenBLAS's threads only wait for each other on a busy
    machine (3.9 s against 0.85 s at load 5 on 2 cores, BENCHMARKS.md issue 50 item 2)."""
    from threadpoolctl import threadpool_info

    seen: list[int] = []

    def recording(a: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        seen.extend(p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas")
        return orthonormal(a)

    hashes, weights = low_rank_corpus()
    fit_lsa(hashes, weights, 4, orthonormalize=recording)
    assert seen and set(seen) == {1}
