"""What a card shows of a text: its first loadable image and a summary cut at a sentence end."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from recengine.text.cleaning.excerpt import ELLIPSIS, first_image, prose, summary_of, usable_image


@pytest.mark.parametrize(
    ("src", "base", "expected"),
    [
        ("https://cdn.example/a.png", None, "https://cdn.example/a.png"),
        ("HTTP://cdn.example/a.png", None, "HTTP://cdn.example/a.png"),
        ("//cdn.example/a.png", None, "//cdn.example/a.png"),
        ("/uploads/a.png", None, "/uploads/a.png"),
        ("img/a.png", "https://blog.example/2024/post.html", "https://blog.example/2024/img/a.png"),
        ("img/a.png", None, None),  # relative, and nothing to resolve it against
        ("img/a.png", "/2024/post.html", None),
        ("data:image/gif;base64,R0lGODlhAQABAAAAACw=", None, None),
        ("javascript:alert(1)", None, None),
        (" JaVaScRiPt:alert(1)", None, None),
        ("vbscript:x", None, None),
        ("ftp://files.example/a.png", None, None),
        ('/a.png" onerror="alert(1)', None, None),  # an attribute value cannot break out
        ("/a.png><script>", None, None),
        ("", None, None),
        (None, None, None),
    ],
)
def test_usable_image(src: str | None, base: str | None, expected: str | None) -> None:
    assert usable_image(src, base) == expected


def test_first_image_skips_placeholders_spacers_and_scripts() -> None:
    html = (
        '<p>text</p><img src="javascript:alert(1)">'
        '<img src="data:image/gif;base64,R0l" data-src="/lazy.png" width="640">'
        '<img src="/second.png">'
    )
    assert first_image(html) == "/lazy.png"  # a lazy-loading plugin's real source
    spacer = '<img src="/spacer.gif" width="1" height="1"><img src="/icon.png" height="16px">'
    assert first_image(spacer + '<IMG SRC="/photo.jpg" WIDTH=400>') == "/photo.jpg"
    assert first_image("<img alt=\"x\" src='/q.png?a=1&amp;b=2'>") == "/q.png?a=1&b=2"
    assert first_image("<p>no image</p>") is None
    assert first_image('<img src="data:image/png;base64,AAAA">') is None


def test_first_image_of_markdown_and_mixed_text() -> None:
    markdown = "intro\n\n![图一](https://oss.example/a.png \"title\")\n\n<img src='/b.png'>"
    assert first_image(markdown) == "https://oss.example/a.png"  # whichever comes first
    assert first_image("![x](javascript:alert(1)) ![y](/ok.png)") == "/ok.png"
    assert (
        first_image("![rel](pics/a.png)", "https://s.example/p/1")
        == "https://s.example/p/pics/a.png"
    )


def test_summary_cuts_at_the_last_sentence_end_within_the_limit() -> None:
    text = "<p>第一句话在这里。第二句话也在这里！第三句话很长很长很长很长很长很长很长。</p>"
    assert summary_of(text, 20) == "第一句话在这里。第二句话也在这里！"
    english = "One sentence here. Another one follows! And a third, rather longer one."
    assert summary_of(english, 45) == "One sentence here. Another one follows!"
    assert summary_of("Short text.", 120) == "Short text."
    assert summary_of("", 120) == "" and summary_of("<p> </p>", 120) == ""


def test_summary_without_a_sentence_end_is_cut_at_a_word_with_an_ellipsis() -> None:
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda"
    cut = summary_of(words, 30)
    assert cut.endswith(ELLIPSIS) and len(cut) <= 30 and cut[:-1] in words
    assert not cut[:-1].endswith(" ")
    chinese = "没有句号的一段很长的中文文字" * 5
    assert summary_of(chinese, 20) == chinese[:19] + ELLIPSIS
    # "a<?" is text, not a sentence end (a ? that is not followed by a space)
    assert summary_of("意志。<?xml x?> 后面还有很多很多很多的文字", 10) == "意志。"


def test_prose_drops_markdown_and_html_that_is_not_prose() -> None:
    markdown = (
        "<!-- comment -->\n## 标题\n\n> 引用的话\n\n- **重点**：[链接文字](./a.md) 和 `代码`\n\n"
        "```java\nint x = 1;\n```\n\n![图](https://x/a.png)正文。"
    )
    assert prose(markdown) == "引用的话\n重点：链接文字 和 代码\n正文。"
    assert prose("<h2>Heading</h2><p>Body <b>text</b>.</p><pre>code()</pre>") == "Body text."
    assert prose("snake_case and a*b stay") == "snake_case and a*b stay"


def test_summaries_of_the_real_corpora(data_dir: Path) -> None:
    """Every summary of the CSDN posts (HTML) and JavaGuide articles (Markdown) fits the limit,
    holds no markup, and, when it is not the whole text, ends a sentence or with an ellipsis."""
    csv.field_size_limit(1 << 30)
    with (data_dir / "csdn-blog-100" / "csdn_blog_100.tsv").open(encoding="utf-8") as f:
        texts = [row[-1] for row in csv.reader(f, delimiter="\t")]
    with (data_dir / "javaguide" / "javaguide.jsonl").open(encoding="utf-8") as f:
        texts += [json.loads(line)["body"] for line in f][:150]
    for text in texts:
        summary = summary_of(text, 120)
        assert len(summary) <= 120
        assert "<p" not in summary and "](" not in summary and "**" not in summary
        assert "\n" not in summary
        if summary != " ".join(prose(text).split("\n")):  # cut: at a sentence end or a word
            assert summary[-1] in "。！？….!?”’」』\"')）", summary
