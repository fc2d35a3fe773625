"""Test data: article records in the external contract's shape, from real text when it matters,
and the settings the sentence encoder's tests read them under."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from recengine.config import Settings
from tests.conftest import make_settings

# What a list item carries for a card besides id, title, url, score and reasons (additive).
CARD = {"image", "summary", "published_at", "category"}


def record(n: int | str, **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": f"a{n}",
        "title": f"标题 {n}",
        "content": f"<p>关于数据库索引与查询优化的文章 {n}</p>",
        "tags": ["数据库"],
        "published_at": "2024-05-01T08:00:00+08:00",
    }
    base.update(fields)
    return base


def _jsonl_records(path: Path, prefix: str, limit: int | None) -> list[dict[str, Any]]:
    """Records of a corpus in tests/data (``id, title, body, category, tags``)."""
    out = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            r = json.loads(line)
            out.append(
                {
                    "id": f"{prefix}{r['id']}",
                    "title": r["title"],
                    "content": r["body"],
                    "category": r["category"],
                    "tags": r["tags"],
                }
            )
            if len(out) == limit:
                break
    return out


def javaguide_records(data: Path, limit: int) -> list[dict[str, Any]]:
    """Real articles (JavaGuide, Markdown bodies) as ingest records."""
    return _jsonl_records(data / "javaguide" / "javaguide.jsonl", "", limit)


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8"
    )
    return path


def csl_records(data: Path, limit: int | None = None) -> list[dict[str, Any]]:
    """Real Chinese paper titles and abstracts (CSL) as ingest records."""
    return _jsonl_records(data / "csl-papers" / "csl_papers.jsonl", "csl-", limit)


def encoder_dense(dims: int, lead_chars: int = 200) -> dict[str, Any]:
    """``dense`` settings with the sentence encoder on (``encoder = "use"``) beside ``dims`` LSA
    dimensions: each article's title and first ``lead_chars`` characters encoded, from 50
    articles on (the encoder tests' JavaGuide corpora have 60 or more)."""
    return {"encoder": "use", "min_articles": 50, "dims": dims, "lead_chars": lead_chars}


def encoder_settings(
    tmp_path: Path, database_url: str, dims: int, lead_chars: int = 200
) -> Settings:
    """A test's settings (``make_settings``) with :func:`encoder_dense` as the dense part."""
    return make_settings(tmp_path, database_url, dense=encoder_dense(dims, lead_chars))
