"""Both tokenizer backends give the same filtered tokens on every real text of tests/data.

The reference is jieba's own part-of-speech tagger (``jieba.posseg``, HMM off) followed by the
same filter: this checks the dictionary-lookup tagging of :class:`Tokenizer` as well as the
backends' segmentation.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from recengine.pipeline.featurize import text_of
from recengine.text.words.tokenize import Tokenizer, tag_words


def real_texts(data: Path) -> list[tuple[str, str]]:
    csv.field_size_limit(1 << 30)
    texts = []
    with (data / "csdn-blog-100" / "csdn_blog_100.tsv").open(encoding="utf-8") as handle:
        for row in csv.reader(handle, delimiter="\t"):
            texts.append((f"csdn/{row[0]}", text_of(row[1], row[7])))
    for name in ("javaguide/javaguide.jsonl", "csl-papers/csl_papers.jsonl"):
        with (data / name).open(encoding="utf-8") as handle:
            for line in handle:
                record = json.loads(line)
                texts.append((record["id"], text_of(record["title"], record["body"])))
    for sample in sorted((data / "csdn-blog-100" / "samples").glob("*.txt")):
        texts.append((sample.name, text_of("", sample.read_text(encoding="utf-8"))))
    return texts


@pytest.mark.slow
def test_backends_identical_on_real_texts(tokenizers: dict[str, Tokenizer], data_dir: Path) -> None:
    import jieba.posseg  # here, not at collection: every test process collects this file

    texts = real_texts(data_dir)
    assert len(texts) == 100 + 429 + 2000 + 5
    fast, ref = tokenizers["rjieba"], tokenizers["jieba"]
    posseg = jieba.posseg.POSTokenizer(ref.backend._jieba)  # type: ignore[attr-defined]
    differ = []
    for name, text in texts:
        # words of accented letters are cut out whole first (tokenize.cut_words), then tagged
        tagged = tag_words(lambda t: [(p.word, p.flag) for p in posseg.cut(t, HMM=False)], text)
        expected = [k for w, f in tagged if (k := ref.keep(w, f))]
        if fast.tokens(text) != expected or ref.tokens(text) != expected:
            differ.append(name)
    assert differ == []
