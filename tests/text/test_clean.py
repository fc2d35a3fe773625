from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from recengine.text.cleaning.clean import clean, nfkc, normalize, strip_html


def test_html_drops_scripts_styles_comments_and_keeps_blocks() -> None:
    html = (
        "<html><head><style>p {color: red}</style><script>alert('x<y')</script></head>"
        "<body><h1>标题</h1><!-- 注释 --><p>第一段<b>加粗</b>文字</p><div>第二段<br>换行</div>"
        "<ul><li>一</li><li>二</li></ul></body></html>"
    )
    assert clean(html) == "标题\n第一段加粗文字\n第二段\n换行\n一\n二"


def test_entities_decoded_once_and_never_become_tags() -> None:
    assert (
        clean("<p>a &amp; b &lt;script&gt; &#x4e2d;&#25991; &nbsp;x</p>") == "a & b <script> 中文 x"
    )


def test_nfkc_folds_full_width_forms() -> None:
    assert clean("Ｐｙｔｈｏｎ３．１１，ＡＰＩ　接口") == "Python3.11,API 接口"


def test_whitespace_collapsed_line_breaks_kept() -> None:
    assert normalize("  a \t  b \r\n\r\n\n  c\u200b d  \n") == "a b\nc d"


def test_plain_text_with_angle_brackets_is_not_treated_as_html() -> None:
    assert clean("if a < b and b > c then 1<2") == "if a < b and b > c then 1<2"


@pytest.mark.parametrize(
    "text",
    [
        "I think a<b and c>d",
        "quoting: <<the whole previous message, with its words>> and my reply",
        "List<String> names = new ArrayList<>(); if (i<n && n>0)",
        "<b and c> alone, no closing tag",
    ],
)
def test_plain_text_keeps_its_angle_brackets(text: str) -> None:
    # the repro of issue 15: the bracketed text was deleted ("I think ad")
    assert clean(text) == text


def test_only_html_elements_are_stripped_from_real_markup() -> None:
    assert clean("<p>x <<quoted words>> y</p><br>") == "x <<quoted words>> y"
    assert clean("<div class='a'>List<String></div>") == "List<String>"
    assert clean("<o:p>Word</o:p> <my-widget id=1>custom</my-widget>") == "Word custom"
    assert clean("text<br/>more") == "text\nmore"
    assert clean("&amp; alone") == "& alone"


@pytest.mark.parametrize("text", ["", "   ", "<p></p>", "<script>x</script>", "\u200b"])
def test_empty_inputs_give_empty_text(text: str) -> None:
    assert clean(text) == ""


def test_emoji_and_mixed_scripts_survive() -> None:
    assert clean("<p>学习 Rust 🦀 很开心😀</p>") == "学习 Rust 🦀 很开心😀"


def test_unclosed_comment_and_broken_tags() -> None:
    assert strip_html("正文<!-- 没有结束") == "正文 "
    assert clean("a <b>b</b> <notatag c") == "a b <notatag c"


def test_fast_nfkc_equals_unicodedata_on_real_text(data_dir: Path) -> None:
    from tests.text.test_tokenize_backends import real_texts

    raw = [text for _, text in real_texts(data_dir)]
    raw += ["全角，标点：（测试）？！；\u3000…\xa0～％．－／｜＜＞ Ａ\u0301 ①²"]
    assert [nfkc(t) for t in raw] == [unicodedata.normalize("NFKC", t) for t in raw]


TRICKY = "，：（）？！；\u3000…\xa0～％．a\u0301\u0308é①中文 \n"


@given(st.text(alphabet=st.sampled_from(list(TRICKY))))
def test_fast_nfkc_equals_unicodedata(text: str) -> None:
    assert nfkc(text) == unicodedata.normalize("NFKC", text)
