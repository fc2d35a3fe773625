"""Repost boilerplate removal: edge lines only, content lines stay."""

from __future__ import annotations

import pytest

from recengine.pipeline.featurize import text_of
from recengine.text.boilerplate import is_boilerplate, strip_boilerplate

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
    ],
)
def test_repost_lines_are_boilerplate(line: str) -> None:
    assert is_boilerplate(line)


@pytest.mark.parametrize(
    "line",
    ["关注点分离是一种设计原则", "endpoint 的配置方法", "来源于生活的例子", "Java 基础", ""],
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
