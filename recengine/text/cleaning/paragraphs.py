"""Readable text (``text.cleaning.clean.readable``) -> paragraphs to show a person: the text's own
breaks, else groups of sentences.

Many exports (the demo's news corpus among them) store a whole article as one line, with
paragraph breaks flattened into runs of spaces or lost altogether. Shown as is, that is a wall
of text. This keeps every line break and every run of two or more spaces (ASCII or the
ideographic space U+3000) as a paragraph break, then cuts what is still longer than
:data:`LONG` characters after a sentence end (。！？!? and a closing quote, or ". "), at the
first sentence end past :data:`TARGET` characters. Nothing is dropped or reordered:
``"".join(paragraphs(t))`` keeps every non-space character of ``t`` in order.
"""

from __future__ import annotations

import re

TARGET = 120  # characters: about three Chinese sentences
LONG = 240  # a block longer than this is cut into sentences groups
_BREAK = re.compile(r"\s*\n\s*|[ \t\u3000]{2,}|\u3000")
_SENTENCE_END = re.compile(r"(?<=[。！？!?…])[”’」』\"')）]*|(?<=[.;；])\s+")


def paragraphs(text: str) -> list[str]:
    """The paragraphs of ``text`` (see the module docstring); blank ones left out, each with its
    runs of whitespace made one space."""
    out: list[str] = []
    for block in _BREAK.split(text):
        block = " ".join(block.split())
        if block:
            out.extend(_cut(block) if len(block) > LONG else [block])
    return out


def _cut(block: str) -> list[str]:
    pieces, start = [], 0
    for end in _SENTENCE_END.finditer(block):
        if end.end() - start >= TARGET and end.end() < len(block):
            pieces.append(block[start : end.end()].strip())
            start = end.end()
    pieces.append(block[start:].strip())
    return [p for p in pieces if p]
