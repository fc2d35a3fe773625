"""Paragraphs for people: the text's own breaks kept, long single-line bodies cut after a
sentence, nothing dropped or reordered."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from recengine.text.cleaning.paragraphs import LONG, TARGET, paragraphs


def test_the_texts_own_breaks_are_kept() -> None:
    assert paragraphs("第一段。\n第二段。\n\n\n第三段。") == ["第一段。", "第二段。", "第三段。"]
    # flattened exports: runs of spaces (ASCII or ideographic) were paragraph breaks
    assert paragraphs("第一段。   第二段。\u3000\u3000第三段。") == [
        "第一段。",
        "第二段。",
        "第三段。",
    ]
    assert paragraphs("one sentence. two") == ["one sentence. two"]  # short: left whole


def test_a_long_single_line_is_cut_after_sentences() -> None:
    sentence = "这是一句关于数据库索引和查询优化的中文句子，" * 3 + "到这里结束。"
    text = sentence * 12
    out = paragraphs(text)
    assert len(out) > 1 and all(p.endswith("。") for p in out)
    assert all(len(p) >= TARGET for p in out[:-1])
    assert "".join(out) == text


def test_a_long_line_without_sentence_ends_stays_whole() -> None:
    text = "字" * (LONG * 3)
    assert paragraphs(text) == [text]


@settings(derandomize=True, max_examples=200, deadline=None)
@given(st.text(alphabet="字a。！？.”\n \u3000", max_size=2000))
def test_nothing_is_dropped_or_reordered(text: str) -> None:
    out = paragraphs(text)
    assert all(p and p == p.strip() for p in out)
    assert "".join("".join(out).split()) == "".join(text.split())
