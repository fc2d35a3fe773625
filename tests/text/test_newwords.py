"""New-word discovery (text/words/newwords.py): the statistics against a brute-force reference."""

from __future__ import annotations

import math
import random
import re
from collections import Counter

import pytest

from recengine.text.words.newwords import DiscoveryParams, discover_words

NAMES = ["蔡英文", "柯文哲", "锦云堂"]
FILLER = "天地玄黄宇宙洪荒日月盈昃辰宿列张寒来暑往秋收冬藏闰余成岁律吕调阳云腾致雨露结为霜"


def corpus(seed: int = 3, n: int = 300) -> list[str]:
    """Random filler with the names dropped in at random places (free boundaries)."""
    rnd = random.Random(seed)
    texts = []
    for _ in range(n):
        parts = [
            "".join(rnd.choice(FILLER) for _ in range(rnd.randrange(1, 6)))
            + (rnd.choice(NAMES) if rnd.random() < 0.4 else "")
            for _ in range(8)
        ]
        texts.append("".join(parts) + ", abc " + "".join(parts[:2]))
    return texts


def reference(texts: list[str], word: str) -> tuple[int, float, float, float]:
    """count, cohesion, left and right entropy of ``word`` by plain counting."""
    runs = [r for t in texts for r in re.findall(r"[\u4e00-\u9fff]{2,}", t)]
    total = sum(len(r) for r in runs)

    def count(s: str) -> int:
        return sum(len(re.findall(f"(?={re.escape(s)})", r)) for r in runs)

    c = count(word)
    cohesion = min(
        math.log(c * total / (count(word[:k]) * count(word[k:]))) for k in range(1, len(word))
    )
    left, right, lb, rb = Counter[str](), Counter[str](), 0, 0
    for r in runs:
        for m in re.finditer(f"(?={re.escape(word)})", r):
            i = m.start()
            if i == 0:
                lb += 1
            else:
                left[r[i - 1]] += 1
            if i + len(word) == len(r):
                rb += 1
            else:
                right[r[i + len(word)]] += 1

    def entropy(neighbours: Counter[str], boundaries: int) -> float:
        n = sum(neighbours.values()) + boundaries
        h = -sum(k / n * math.log(k / n) for k in neighbours.values())
        return h + boundaries / n * math.log(n)

    return c, cohesion, entropy(left, lb), entropy(right, rb)


def test_names_are_found_with_the_statistics_of_plain_counting() -> None:
    texts = corpus()
    found = {w.word: w for w in discover_words(texts, DiscoveryParams(min_pmi=2.0))}
    assert set(NAMES) <= set(found)
    for name in NAMES:
        c, cohesion, left, right = reference(texts, name)
        w = found[name]
        assert w.count == c
        assert w.cohesion == pytest.approx(cohesion, rel=1e-9)
        assert w.left_entropy == pytest.approx(left, rel=1e-9)
        assert w.right_entropy == pytest.approx(right, rel=1e-9)


def test_fragments_of_a_name_have_bound_boundaries() -> None:
    # 英文 is always preceded by 蔡 here: its left boundary is not free
    found = {w.word for w in discover_words(corpus(), DiscoveryParams(min_pmi=0.0))}
    assert "蔡英文" in found and "英文" not in found and "蔡英" not in found


def test_thresholds_keep_and_order() -> None:
    texts = corpus()
    everything = discover_words(texts, DiscoveryParams(min_count=1, min_pmi=-50, min_entropy=0))
    counts = [(-w.count, w.word) for w in everything]
    assert counts == sorted(counts)  # most frequent first, ties by the word
    strict = discover_words(texts, DiscoveryParams(min_count=10**6))
    assert strict == []
    only = discover_words(texts, DiscoveryParams(min_pmi=2.0), keep=lambda w: w != "蔡英文")
    assert "蔡英文" not in {w.word for w in only} and "柯文哲" in {w.word for w in only}


def test_edge_stop_characters_and_empty_input() -> None:
    texts = [f"{c}的蔡英文" for c in FILLER] * 3
    found = {w.word for w in discover_words(texts, DiscoveryParams(min_pmi=0.0))}
    assert not any(w.startswith("的") or w.endswith("的") for w in found)
    assert discover_words([]) == [] and discover_words(["abc", "", "12"]) == []


@pytest.mark.parametrize(
    "bad", [{"min_len": 1}, {"max_len": 5}, {"min_len": 3, "max_len": 2}, {"min_count": 0}]
)
def test_bad_parameters(bad: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        DiscoveryParams(**bad)
