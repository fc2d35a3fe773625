"""Repost boilerplate: the header and footer lines a repost adds around the same article.

Reposting sites wrap the text they copy in lines that say where it came from and who may copy
it ("转载自…", "原文链接：https://…", "版权声明：本文为…博主的原创文章…", "关注公众号…",
"（责任编辑：…）"). Such lines are a large share of a short article, so they pull the
fingerprint of a repost away from its original; they say nothing about the article itself, so
they are removed before tokenization.

Only lines at the edges are considered (the first ``HEAD_LINES`` and the last ``TAIL_LINES``),
only short ones (``MAX_LINE`` characters), and only when they start with a marker of repost
boilerplate or consist mostly of a link: a content line that merely mentions an author or a URL
in the body of the text stays. The markers are the common Chinese (and English) conventions of
blog and news reposts; the list is a setting-free constant because it is part of what a
fingerprint means (changing it changes fingerprints: ``model_params`` records the method).
"""

from __future__ import annotations

import re

HEAD_LINES = 4
TAIL_LINES = 6
MAX_LINE = 160

# Phrases that only boilerplate starts with.
_PHRASES = (
    "转载|本文转载|本文转自|原文链接|原文地址|原文出处|原标题|版权声明|版权所有|著作权归|"
    "责任编辑|免责声明|点击上方|点击下方|点击蓝字|长按|扫码|扫描二维码|推荐阅读|相关阅读|延伸阅读|"
    "往期回顾|往期推荐|觉得不错|点个在看|关注公众号|关注我们|欢迎关注|"
    r"the end\b|end\b|reposted\b|copyright\b|originally published\b"
)
# Labels that start boilerplate only when followed by a colon, a bar or a space ("作者：…").
_LABELS = r"作者|来源|本文来源|出处|编辑|校对|审核|声明|原创|文|图|source|via|author"
_MARKER = re.compile(rf"^[\s\W_]*(?:{_PHRASES}|(?:{_LABELS})\s*[:：|丨/\s])", re.IGNORECASE)
_URL = re.compile(r"https?://\S+|www\.\S+", re.IGNORECASE)
# A short line carrying a publication date: the byline of a repost ("… 发布于 2023-05-01 …").
_DATED = re.compile(r"\d{4}\s*[-/年.]\s*\d{1,2}\s*[-/月.]\s*\d{1,2}")
MAX_DATED_LINE = 60


def is_boilerplate(line: str) -> bool:
    """Whether one edge line looks like repost boilerplate (see the module docstring)."""
    text = line.strip()
    if not text or len(text) > MAX_LINE:
        return False
    if _MARKER.match(text):
        return True
    if len(text) <= MAX_DATED_LINE and _DATED.search(text):
        return True
    urls = sum(len(m) for m in _URL.findall(text))
    return urls > 0 and urls >= len(text) / 3


def strip_boilerplate(text: str) -> str:
    """``text`` (one paragraph per line) without boilerplate lines at its head and tail.

    Lines are removed from the outside in: the first non-boilerplate line ends the header,
    the last one starts the footer. A text made only of such lines is returned unchanged.

    Example:
        >>> strip_boilerplate("转载自某博客\\n正文第一段。\\n原文链接：https://x.cn/1")
        '正文第一段。'
    """
    lines = text.split("\n")
    start = 0
    while start < min(HEAD_LINES, len(lines)) and is_boilerplate(lines[start]):
        start += 1
    stop = len(lines)
    while stop > max(start, len(lines) - TAIL_LINES) and is_boilerplate(lines[stop - 1]):
        stop -= 1
    if start >= stop:
        return text
    return "\n".join(lines[start:stop])
