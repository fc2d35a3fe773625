"""The containment-aware verification on real text: symmetric, an excerpt or a digest joins its
source, a short quote or a reply that quotes a post does not, junk pages with other titles do
not pair up."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import combinations, pairwise
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recengine.features.neardup import NearDupCriterion, Verdict
from recengine.features.tfidf import EMPTY_VECTOR
from recengine.pipeline.featurize import compared_of
from recengine.text.cleaning.clean import clean
from recengine.text.cleaning.quotes import (
    _BBCODE,
    _QUOTED,
    _SEPARATOR,
    _kept,
    _line_by_line,
    _unquoted_lines,
    unquoted,
)
from recengine.text.neardup.compare import address_chars
from tests.factories import javaguide_records
from tests.text.test_tokenize_backends import real_texts

CRITERION = NearDupCriterion(k=8, min_cosine=0.93)
_SENTENCE = re.compile(r"[^。！？!?\n]*(?:[。！？!?]+|\n|$)")


def judge(a: tuple[str, str], b: tuple[str, str]) -> Verdict:
    return CRITERION.judge(0, EMPTY_VECTOR, 0, EMPTY_VECTOR, compared_of(*a), compared_of(*b))


@pytest.fixture(scope="module")
def articles(data_dir: Path) -> list[tuple[str, str]]:
    records = javaguide_records(data_dir, 120)
    out = [(r["title"], clean(r["content"])) for r in records]
    return [a for a in out if 3_000 <= len(a[1]) <= 20_000][:30]


def sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE.findall(text) if s.strip()]


def test_an_excerpt_joins_its_source(articles: list[tuple[str, str]]) -> None:
    for title, body in articles:
        parts = sentences(body)
        excerpt = "".join(parts[: len(parts) * 6 // 10]) + "\n……阅读全文"
        verdict = judge((title, body), (title, excerpt))
        assert verdict.duplicate and verdict.rule in ("containment", "resemblance"), verdict
        assert verdict.containment is not None and verdict.containment > 0.9


def test_a_digest_joins_the_post_it_carries(articles: list[tuple[str, str]]) -> None:
    for (title, body), (_, other) in pairwise(articles):
        piece = other[: len(body) // 3]
        verdict = judge((title, body), (title, body + "\n相关阅读\n" + piece))
        assert verdict.duplicate, verdict


def test_a_short_quote_in_a_long_article_is_not_a_duplicate(
    articles: list[tuple[str, str]],
) -> None:
    for (title, body), (other_title, other) in pairwise(articles):
        short = "".join(sentences(other)[:4])
        assert len(short) < len(body) / 5
        host = (
            body[: len(body) // 2]
            + f"\n正如《{other_title}》一文所说：“"
            + short
            + "”\n"
            + body[len(body) // 2 :]
        )
        verdict = judge((other_title, short), (title, host))
        assert not verdict.duplicate and verdict.containment is not None
        assert verdict.containment > 0.8 > 0.35 > (verdict.coverage or 0.0), verdict


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(["甲乙丙丁戊己", "数据库索引", "查询优化器", "事务隔离级别", "。"]),
        max_size=40,
    ),
    st.lists(
        st.sampled_from(["甲乙丙丁戊己", "缓存穿透", "查询优化器", "主从复制", "。"]), max_size=40
    ),
    st.text(max_size=12),
    st.text(max_size=12),
)
def test_the_decision_is_symmetric(a: list[str], b: list[str], ta: str, tb: str) -> None:
    x, y = (ta, "".join(a)), (tb, "".join(b))
    one, two = judge(x, y), judge(y, x)
    assert (one.duplicate, one.rule, one.score) == (two.duplicate, two.rule, two.score)
    assert (one.resemblance, one.containment, one.coverage) == (
        two.resemblance,
        two.containment,
        two.coverage,
    )


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 400),
    st.integers(0, 800),
    st.floats(0.05, 1.0),
    st.floats(0.05, 1.0),
    st.floats(0.05, 1.0),
)
def test_the_fewest_shared_shingles_that_pass_are_what_decide_says(
    small: int, more: int, res: float, cont: float, cover: float
) -> None:
    # Texts of `small` and `small + more` shingles sharing `c` of them, for every c: decide()
    # passes exactly from needed() on (none when needed() is past the smaller text), at any
    # thresholds; verify() gives decide()'s decision there and None below.
    criterion = NearDupCriterion(8, 0.9, res, cont, cover, min_body_chars=0)
    large = small + more
    need = criterion.needed(small, large)
    a = _Text(np.arange(small, dtype=np.uint64))
    for c in range(small + 1):
        b = _Text(np.arange(small - c, small - c + large, dtype=np.uint64))
        decision = criterion.decide(0, 0, a, b)
        assert decision.duplicate == (c >= need)
        assert criterion.verify(0, 0, a, b) == (decision if decision.duplicate else None)


@dataclass(frozen=True)
class _Text:
    """A compared text of given shingles, with a body long enough for the junk rule."""

    shingles: npt.NDArray[np.uint64]
    title: npt.NDArray[np.uint64] = field(default_factory=lambda: np.zeros(0, np.uint64))
    body_chars: int = 1_000


def test_verify_gives_decide_s_verdict_on_real_candidate_pairs(data_dir: Path) -> None:
    # Real texts, their excerpts, digests and edits and unrelated neighbours: verify() is
    # decide() on every duplicate and None on every other pair, with the merge and without.
    from recengine.features.neardup import MERGE

    criterion = NearDupCriterion(3, 0.93)
    texts = [t for _, t in real_texts(data_dir)[:120]]
    shown = [compared_of("", t) for t in texts]
    edits = [
        compared_of("", e)
        for t, o in zip(texts, texts[1:] + texts[:1], strict=True)
        for e in (t[: len(t) * 6 // 10], t + o[: len(o) // 3], t[len(t) // 5 :])
    ]
    passed = 0
    for compiled in (True, False):
        with MERGE.forced(compiled):
            for k, one in enumerate(shown):
                for other in [*edits[3 * k : 3 * k + 3], *shown[k + 1 : k + 4]]:
                    decision = criterion.decide(1, 2, one, other)
                    passed += decision.duplicate
                    assert criterion.verify(1, 2, one, other) == (
                        decision if decision.duplicate else None
                    )
    assert passed > 120  # most edits are duplicates: both outcomes were checked


def test_junk_pages_with_other_titles_do_not_pair_up() -> None:
    chrome = (
        "特别声明:以上文章内容仅代表作者本人观点,不代表新浪看点观点或立场。如有关于作品内容请联系。"
    )
    assert not judge(
        ("根雕店失火现场火光冲天", chrome), ("热车大盘点,福克斯限量版", chrome)
    ).duplicate
    assert judge(("根雕店失火现场火光冲天", chrome), ("根雕店失火现场火光冲天!", chrome)).duplicate
    assert not judge(("标题甲", ""), ("完全不同的标题", "")).duplicate


def test_paywall_stubs_of_different_articles_do_not_pair_up(data_dir: Path) -> None:
    """The real stubs of JavaGuide's paid articles: one template around a different name, most
    of their word characters in link addresses. Two stubs of different articles are not the same
    article; a repost of one stub under its title is."""
    stubs = [
        (r["title"], r["content"])
        for r in javaguide_records(data_dir, 10_000)
        if "付费" in r["title"] and "javaguide.cn" in r["content"]
    ]
    # stubs whose body says less than the junk rule's floor once addresses are not counted
    assert sum(compared_of(*s).body_chars < CRITERION.min_body_chars for s in stubs) >= 5
    for a, b in combinations(stubs, 2):
        assert not judge(a, b).duplicate, (a[0], b[0])
    for title, content in stubs:
        assert judge((title, content), (title, content + "\n转自 https://example.org")).duplicate


def test_web_addresses_do_not_count_as_body() -> None:
    said = "正文" * 60
    plain, linked = compared_of("t", said), compared_of("t", f"{said}https://a.example.org/x?y=1")
    assert plain.body_chars == linked.body_chars == 120
    assert len(linked.shingles) > len(plain.shingles)  # what is compared keeps the address
    assert address_chars("[链接](www.Example.com/a_b) and ftp://x.cn, not foo://y") == 21
    assert address_chars("[链接](../about/stars-2.md)(点击链接即可查看)") == 13
    assert address_chars("[维基](https://zh.wikipedia.org/wiki/分治法)策略") == 26  # 分治法 too
    assert address_chars("xhttp://a.cn a1www.b.cn ok.http:// 无") == 0  # inside words, empty
    assert address_chars("HTTP://A.CN/X") == address_chars("http://a.cn/x") == 8


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet="htpsfw:/.()[]]x1中 ", max_size=30), max_size=6))
def test_addresses_end_at_whitespace(pieces: list[str]) -> None:
    """Counted per piece or in the text they make joined by spaces: the same."""
    joined = " ".join(pieces)
    assert address_chars(joined) == sum(address_chars(p) for p in pieces)
    assert 0 <= address_chars(joined) <= len(compared_of("", joined).shingles) + len(joined)


# Quoting conventions of mail and Usenet (RFC 3676 ">"), top-posting clients, BBCode, SMTH.
_REPLIES = (
    "{new}\n\nOn Tue, 3 Mar 2009 at 10:12, Ann Lee <ann@example.org> wrote:\n{quoted}",
    "{new}\nIn article <1234@news.example.org>, ann@example.org writes:\n{quoted}",
    "{new}\n\n-----Original Message-----\nFrom: Ann\nSubject: Re: post\n\n{plain}",
    "[quote=Ann]{plain}[/quote]\n{new}",
    "{new}\n【 在 ann 的大作中提到: 】\n{smth}",
    "{quoted}\n{new}",
)


@pytest.mark.parametrize("template", _REPLIES)
def test_a_reply_is_not_the_post_it_quotes(articles: list[tuple[str, str]], template: str) -> None:
    for (title, body), (_, other) in pairwise(articles[:11]):
        post = "\n".join(sentences(body)[:40])
        # the reply's own text: a few sentences (Markdown "> " notes of the source unmarked)
        new = "".join(s.lstrip("> ") for s in sentences(other)[:3])
        reply = template.format(
            new=new,
            quoted="\n".join("> " + line for line in post.split("\n")),
            plain=post,
            smth="\n".join(": " + line for line in post.split("\n")),
        )
        assert new[:20] in unquoted(reply) and post[:20] not in unquoted(reply)
        assert not judge((title, post), ("Re: " + title, reply)).duplicate
        # the same reply reposted (its own text and quote kept) is still its duplicate
        assert judge(("Re: " + title, reply), ("Re: " + title, reply + "\n")).duplicate


def test_a_digest_that_carries_a_post_unquoted_is_still_its_duplicate(
    articles: list[tuple[str, str]],
) -> None:
    title, body = articles[0]
    post = "\n".join(sentences(body)[:40])
    digest = "本周精选\n" + post + "\n> 编者按：欢迎投稿"
    assert judge((title, post), ("本周精选", digest)).duplicate


_QUOTING = st.sampled_from(
    [
        "\n",
        " ",
        ">",
        "> ",
        "-",
        "--",
        "-----Original Message-----",
        "----- 原始邮件 -----",
        "【",
        "【 在 Ann 的大作中提到: 】",
        ": ",
        "[quote]",
        "[QUOTE=ann]",
        "[/quote]",
        "Ann wrote:",
        "写道：",
        "正文",
        "text",
        "\u3000",
        "\t",
        "\x1c",
        "\x85",
        "\u2028",
    ]
)


@given(st.lists(_QUOTING, max_size=30).map("".join))
def test_the_quick_path_of_unquoted_answers_what_the_rules_do(text: str) -> None:
    # Texts built of quoting conventions and their near misses: the one search that lets most
    # texts skip the line rules never skips a text they would change.
    assert unquoted(text) == _kept(_unquoted_lines(text), text)


@given(st.lists(_QUOTING, max_size=30).map("".join))
def test_the_whole_text_searches_find_what_the_line_rules_remove(text: str) -> None:
    # Without an SMTH-style head the rules are applied by searches over the whole text; they
    # keep exactly the lines the rules applied line by line keep. A "【" of another kind (the
    # "【环球网报道】" of news) keeps a text on the whole-text path.
    text = text.replace("在", "")
    assert _unquoted_lines(text) == _line_by_line(_BBCODE.sub("\n", text).split("\n"))


@given(st.lists(_QUOTING, max_size=12).map(lambda parts: "".join(parts).replace("\n", "")))
def test_the_line_patterns_read_a_line_as_the_per_line_ones_did(line: str) -> None:
    # ``[^\S\n]`` (so that the patterns also serve MULTILINE searches) is ``\s`` within a line.
    old_quoted = re.compile(r"^\s*>")
    old_separator = re.compile(
        r"^\s*-{2,}\s*(?:original message|forwarded by .*|原始邮件|原始郵件)\s*-{2,}\s*$|"
        r"^\s*-{5,}\s*原始邮件\s*-{5,}\s*$",
        re.IGNORECASE,
    )
    assert bool(_QUOTED.match(line)) == bool(old_quoted.match(line))
    assert bool(_SEPARATOR.match(line)) == bool(old_separator.match(line))
    assert bool(_QUOTED.match(line)) == line.lstrip().startswith(">")


def test_the_whole_text_searches_on_real_articles(data_dir: Path) -> None:
    # Real Markdown articles: blockquotes ("> " notes), "---" rules, code with ">" and "--";
    # and the real texts that hold a "【" (news heads, none SMTH-style).
    bodies = [clean(r["content"]) for r in javaguide_records(data_dir, 200)]
    quoting = [b for b in bodies if _QUOTED.search(b)]
    assert len(quoting) >= 20, "too few real texts with quoted lines to prove anything"
    texts = [t for _, t in real_texts(data_dir)]
    bracketed = [t for t in texts if "【" in t]
    assert len(bracketed) >= 20, "too few real texts with 【 to prove anything"
    for body in bodies + bracketed:
        assert _unquoted_lines(body) == _line_by_line(_BBCODE.sub("\n", body).split("\n"))
