"""New-word discovery: character n-grams a corpus uses as words although the dictionary lacks them.

jieba without its HMM step cuts a name it does not know into known pieces (蔡英文 -> 蔡 + 英文,
"English"), and those pieces then make unrelated articles look alike. The corpus itself says
which strings are words: a word is *frequent*, its characters *stick together* (they occur
together far more often than chance would put them side by side) and its *boundaries are free*
(many different characters come before and after it). These are the classic statistics of
unsupervised Chinese word discovery (Sproat & Shih 1990 for the association, Huang & Powers
2003 / Jin & Tanaka-Ishii 2006 for boundary entropy; the PMI + left/right entropy recipe
popularised by Matrix67, 2012):

    count(w)          >= min_count
    cohesion(w)       = min over splits w = a|b of  ln( p(w) / (p(a) p(b)) )  >= min_pmi
                        with p(s) = count(s) / (characters counted)
    H_left(w), H_right(w)  = entropy (nats) of the character before / after w  >= min_entropy
                        (a text boundary counts as a character never seen twice)

Only runs of CJK ideographs are counted (Latin words are cut at spaces already). Counting is
numpy over integer n-gram keys: every distinct character gets a 16-bit id, an n-gram of up to
4 characters is one ``uint64``, so a 10 MB sample is counted in seconds without a Python loop
per position.

Pure: texts in, words out. Which words to keep in the end (not already in the dictionary, not
overriding the user dictionary) and how they reach the tokenizer is the caller's business.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

_CJK_RUN = re.compile(r"[\u4e00-\u9fff]{2,}")
_BITS = 16
MAX_LEN = 4  # 4 x 16-bit character ids fill a uint64

# Characters that begin or end no new word: particles, prepositions, conjunctions, pronouns and
# auxiliaries that stick to whatever follows or precedes them (的 is the most frequent character
# of Chinese). A candidate starting or ending with one is a phrase fragment, not a word.
EDGE_STOP_CHARS = frozenset(
    "的了是在和与及或等也都而就把被让给对从向以于之其这那个们我你他她它吗呢吧啊着过得地并很还"
    "又再已将会要能可为所有上下中不没无一二三四五六七八九十年月日"
)


@dataclass(frozen=True)
class NewWord:
    """A discovered word and the statistics that admitted it."""

    word: str
    count: int
    cohesion: float
    left_entropy: float
    right_entropy: float


@dataclass(frozen=True)
class DiscoveryParams:
    """Thresholds of :func:`discover_words` (see the module docstring for the formulas).

    Raises:
        ValueError: a length outside 2..4 or a non-positive count.
    """

    min_count: int = 5
    min_pmi: float = 4.0
    min_entropy: float = 1.0
    min_len: int = 2
    max_len: int = MAX_LEN

    def __post_init__(self) -> None:
        if not 2 <= self.min_len <= self.max_len <= MAX_LEN:
            raise ValueError(f"word lengths must satisfy 2 <= min_len <= max_len <= {MAX_LEN}")
        if self.min_count < 1:
            raise ValueError(f"min_count must be >= 1, got {self.min_count}")


def discover_words(
    texts: Iterable[str],
    params: DiscoveryParams | None = None,
    keep: Callable[[str], bool] | None = None,
) -> list[NewWord]:
    """Words of ``texts`` by frequency, cohesion and boundary entropy.

    Args:
        texts: clean texts (a sample of the corpus).
        params: thresholds.
        keep: a further test on each candidate string (e.g. "not in the dictionary").

    Returns:
        The words that pass, most frequent first (ties by the word), with their statistics.

    Example:
        >>> texts = [
        ...     f"{c}说{t}蔡英文{d}" for c in "甲乙丙丁" for t in "今早晚午" for d in "来去走到"
        ... ]
        >>> [w.word for w in discover_words(texts, DiscoveryParams(min_pmi=1.0))][:2]
        ['蔡英文', '丁说']
    """
    params = params or DiscoveryParams()
    ids, chars = _char_ids(texts)
    if len(chars) >= 1 << _BITS:
        raise ValueError("more than 65,535 distinct characters in the sample")
    counts = _ngram_counts(ids, params.max_len)
    total = max(1, int(counts[1][1].sum()))
    found: list[NewWord] = []
    for n in range(params.min_len, params.max_len + 1):
        keys, cnt = counts[n]
        frequent = cnt >= params.min_count
        keys, cnt = keys[frequent], cnt[frequent]
        cohesion = _cohesion(keys, cnt, n, counts, total)
        sticky = cohesion >= params.min_pmi
        keys, cnt, cohesion = keys[sticky], cnt[sticky], cohesion[sticky]
        left, right = _boundary_entropy(ids, keys, n)
        free = np.minimum(left, right) >= params.min_entropy
        for j in np.flatnonzero(free).tolist():
            word = _decode(int(keys[j]), n, chars)
            if word[0] in EDGE_STOP_CHARS or word[-1] in EDGE_STOP_CHARS:
                continue
            if keep is not None and not keep(word):
                continue
            found.append(
                NewWord(word, int(cnt[j]), float(cohesion[j]), float(left[j]), float(right[j]))
            )
    found.sort(key=lambda w: (-w.count, w.word))
    return found


def _char_ids(texts: Iterable[str]) -> tuple[npt.NDArray[np.int64], list[str]]:
    """Every CJK run of the texts, joined with a 0 between runs; characters numbered from 1."""
    joined = "\n".join(run for text in texts for run in _CJK_RUN.findall(text))
    if not joined:
        return np.zeros(0, np.int64), [""]
    codes = np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32)
    distinct, inverse = np.unique(codes, return_inverse=True)
    ids = inverse.astype(np.int64) + 1
    chars = [""] + [chr(c) for c in distinct.tolist()]
    newline = np.searchsorted(distinct, ord("\n"))
    ids[codes == ord("\n")] = 0
    chars[int(newline) + 1] = ""
    return ids, chars


def _keys(
    ids: npt.NDArray[np.int64], n: int
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.intp]]:
    """Key of the n-gram starting at every position that has one without a boundary inside,
    and those positions."""
    m = len(ids) - n + 1
    if m <= 0:
        return np.zeros(0, np.uint64), np.zeros(0, np.intp)
    valid = np.ones(m, bool)
    key = np.zeros(m, np.uint64)
    for j in range(n):
        part = ids[j : j + m]
        valid &= part != 0
        key = (key << np.uint64(_BITS)) | part.astype(np.uint64)
    pos = np.flatnonzero(valid)
    return key[pos], pos


def _ngram_counts(
    ids: npt.NDArray[np.int64], max_len: int
) -> dict[int, tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64]]]:
    """n -> (sorted distinct keys, their counts), n = 1..max_len."""
    out = {}
    for n in range(1, max_len + 1):
        keys, _ = _keys(ids, n)
        distinct, cnt = np.unique(keys, return_counts=True)
        out[n] = (distinct, cnt.astype(np.int64))
    return out


def _count_of(
    keys: npt.NDArray[np.uint64], table: tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64]]
) -> npt.NDArray[np.int64]:
    distinct, cnt = table
    at = np.clip(np.searchsorted(distinct, keys), 0, max(len(distinct) - 1, 0))
    found = distinct[at] == keys if len(distinct) else np.zeros(len(keys), bool)
    return np.where(found, cnt[at] if len(cnt) else 0, 0)


def _cohesion(
    keys: npt.NDArray[np.uint64],
    cnt: npt.NDArray[np.int64],
    n: int,
    counts: dict[int, tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64]]],
    total: int,
) -> npt.NDArray[np.float64]:
    """min over the splits of ln(p(w) / (p(a) p(b))), p = count / total."""
    best = np.full(len(keys), np.inf)
    for k in range(1, n):
        shift = np.uint64(_BITS * (n - k))
        head = keys >> shift
        tail = keys & np.uint64((1 << int(shift)) - 1)
        ca = _count_of(head, counts[k]).astype(np.float64)
        cb = _count_of(tail, counts[n - k]).astype(np.float64)
        pmi = np.log(cnt * float(total)) - np.log(np.maximum(ca * cb, 1.0))
        best = np.minimum(best, pmi)
    return best


def _boundary_entropy(
    ids: npt.NDArray[np.int64], keys: npt.NDArray[np.uint64], n: int
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Entropy of the left and right neighbour character of each key's occurrences."""
    all_keys, pos = _keys(ids, n)
    at = np.searchsorted(keys, all_keys)
    at = np.clip(at, 0, max(len(keys) - 1, 0))
    hit = keys[at] == all_keys if len(keys) else np.zeros(len(all_keys), bool)
    cand, pos = at[hit], pos[hit]
    padded = np.concatenate(([0], ids, [0]))
    left = padded[pos]  # ids[pos - 1], 0 at a boundary
    right = padded[pos + n + 1]  # ids[pos + n]
    return _entropy(cand, left, len(keys)), _entropy(cand, right, len(keys))


def _entropy(
    cand: npt.NDArray[np.intp], neighbour: npt.NDArray[np.int64], m: int
) -> npt.NDArray[np.float64]:
    """Per candidate, -sum p ln p over its neighbours; each boundary (id 0) is its own value."""
    totals = np.bincount(cand, minlength=m).astype(np.float64)
    pair = cand.astype(np.int64) * (1 << _BITS) + neighbour
    distinct, cnt = np.unique(pair, return_counts=True)
    owner = distinct >> _BITS
    boundary = (distinct & ((1 << _BITS) - 1)) == 0
    n_of = totals[owner]
    p = cnt / n_of
    # a boundary pair of count c is c distinct neighbours of probability 1/N each
    terms = np.where(boundary, cnt / n_of * np.log(n_of), -p * np.log(p))
    return np.bincount(owner, weights=terms, minlength=m).astype(np.float64)


def _decode(key: int, n: int, chars: list[str]) -> str:
    mask = (1 << _BITS) - 1
    return "".join(chars[(key >> (_BITS * (n - 1 - j))) & mask] for j in range(n))


def inside_counts(candidates: Collection[str], tokens: Mapping[str, int]) -> Counter[str]:
    """Per candidate, its occurrences inside a longer token of a segmentation of the texts it
    was found in (``tokens``: token -> occurrences; a candidate met twice in one token counts
    once there).

    A candidate the dictionary's own segmentation mostly sees inside longer words is a fragment
    of them (南省 of 河南省 and 湖南省, 委书记 of 市委书记), however free its boundaries look:
    its neighbours vary because the words it is part of do.

    Example:
        >>> inside_counts(["南省", "英文"], {"河南省": 3, "湖南省": 2, "英文": 4, "蔡": 1})
        Counter({'南省': 5})
    """
    wanted = set(candidates)
    lengths = sorted({len(c) for c in wanted})
    out: Counter[str] = Counter()
    for token, n in tokens.items():
        size = len(token)
        if not lengths or size <= lengths[0]:
            continue
        seen = {token[a : a + k] for k in lengths if k < size for a in range(size - k + 1)} & wanted
        for piece in seen:
            out[piece] += n
    return out
