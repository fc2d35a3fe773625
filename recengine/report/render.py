"""The report as files: ``index.html`` and its PNG plots (matplotlib, the ``report`` extra).

Plots carry only numbers (the machine may have no CJK font); titles and terms are in HTML
tables, which the reader's browser renders in any script. Every value is HTML-escaped.
"""

from __future__ import annotations

import html
import shutil
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import numpy as np

from recengine.errors import ConfigError
from recengine.report.ctr import plot_ctr, render_ctr
from recengine.report.data import ReportData

STYLE = """
body{font-family:system-ui,sans-serif;max-width:980px;margin:2em auto;color:#222;padding:0 1em}
h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;width:100%}td,th{padding:.25em .5em;border-bottom:1px solid #eee;
text-align:left;vertical-align:top}.num{text-align:right;font-variant-numeric:tabular-nums}
.bar{background:#4c78a8;height:.8em;display:inline-block}.muted{color:#777}
.kpi{display:inline-block;margin:0 2em 1em 0}.kpi b{display:block;font-size:1.5em}
"""


def require_plotting() -> None:
    """Raise :class:`ConfigError` now, before any work, when matplotlib is missing."""
    _pyplot()


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as exc:
        raise ConfigError("the report needs matplotlib: pip install 'recengine[report]'") from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_nn_histogram(data: ReportData, path: Path) -> None:
    plt = _pyplot()
    counts = np.bincount(data.nn_distances, minlength=65)[:65]
    fig, ax = plt.subplots(figsize=(8, 3.2), dpi=110)
    colors = ["#e45756" if d <= data.hamming_k else "#4c78a8" for d in range(65)]
    ax.bar(range(65), counts, color=colors, width=0.85)
    ax.axvline(data.hamming_k + 0.5, color="#555", linestyle="--", linewidth=1)
    ax.set_xlabel("Hamming distance to the nearest other article (bits of 64)")
    ax.set_ylabel("articles")
    ax.set_title(f"Nearest fingerprints (red: within k = {data.hamming_k} bits, a candidate pair)")
    ax.set_xlim(-1, 40 if counts[40:].sum() == 0 else 65)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_cluster_sizes(data: ReportData, path: Path) -> None:
    plt = _pyplot()
    sizes = Counter(data.cluster_sizes)
    fig, ax = plt.subplots(figsize=(8, 3.2), dpi=110)
    xs = sorted(sizes)
    counts = [sizes[x] for x in xs]
    ax.bar([str(x) for x in xs], counts, color="#4c78a8", width=0.6)
    wide = max(counts) > 50 * min(counts)  # a long tail: a log scale keeps it visible
    if wide:
        ax.set_yscale("log")
    ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlabel("cluster size (articles, canonical included)")
    ax.set_ylabel("clusters (log scale)" if wide else "clusters")
    ax.set_title("Near-duplicate cluster sizes")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def write_report(data: ReportData, folder: Path, site: str | None = None) -> Path:
    """Write ``index.html`` and its plots into ``folder``; returns the HTML path.

    Args:
        site: the site's address (``https://blog.example.com``): articles stored with a
            site-relative url (``/news/123``) are linked to it; without it only absolute
            http(s) urls are links.

    A folder this call created is removed again when writing fails: no empty report is left.
    """
    require_plotting()
    created = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    try:
        if len(data.nn_distances):
            plot_nn_histogram(data, folder / "nn_hamming.png")
        if data.cluster_sizes:
            plot_cluster_sizes(data, folder / "cluster_sizes.png")
        if data.ctr is not None and data.ctr.by_variant:
            plot_ctr(data.ctr, folder / "ctr_by_slot.png", _pyplot())
        page = folder / "index.html"
        page.write_text(render_html(data, site), encoding="utf-8")
    except BaseException:
        if created:
            shutil.rmtree(folder, ignore_errors=True)
        raise
    return page


def render_html(data: ReportData, site: str | None = None) -> str:
    """The page. Its own words are English (``lang='en'``); the corpus's titles and terms carry
    the corpus's language (``data.lang``), so a browser or a screen reader treats each text as
    what it is."""
    e = html.escape
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>recengine corpus report</title><style>{STYLE}</style></head><body>",
        "<h1>recengine corpus report</h1>",
        f"<p class='muted'>{e(data.database)} · generated "
        f"{data.generated_at:%Y-%m-%d %H:%M UTC}</p>",
        _summary(data),
        _neighbours(data),
        _clusters(data, site),
        _terms(data),
        render_ctr(data.ctr),
        "</body></html>",
    ]
    return "\n".join(parts)


def _kpi(label: str, value: str) -> str:
    return f"<span class='kpi'><b>{html.escape(value)}</b>{html.escape(label)}</span>"


def _new_words(data: ReportData, words: list[str]) -> str:
    """What the model's new-word discovery found (``tokenizer.new_words``), a few shown."""
    if not words:
        return ""
    shown = _in_corpus_lang(data, "、".join(words[:30]) + ("…" if len(words) > 30 else ""))
    return f"; {len(words):,} words beside the dictionary, found in the corpus ({shown})"


def _in_corpus_lang(data: ReportData, text: str) -> str:
    """Escaped corpus text marked with the corpus's language."""
    return f"<span lang='{html.escape(data.lang)}'>{html.escape(text)}</span>"


def _link(data: ReportData, site: str | None, external_id: str, title: str) -> str:
    """The title, linked to the article's page when its url is http(s) (a site-relative url:
    when ``site`` says where the site is)."""
    shown = _in_corpus_lang(data, title)
    url = data.urls.get(external_id)
    if url and site and not urlsplit(url).scheme and not url.startswith("//"):
        url = urljoin(site.rstrip("/") + "/", url.lstrip("/"))
    if not url or urlsplit(url).scheme.lower() not in ("http", "https"):
        return shown
    return f"<a href='{html.escape(url, quote=True)}'>{shown}</a>"


def _summary(data: ReportData) -> str:
    c, m = data.counts, data.model
    model = (
        f"IDF model version {data.version}: fitted on {m.get('n_docs', 0):,} articles, "
        f"{m.get('n_terms', 0):,} terms, by the {m.get('engine', '?')} engine"
        + _new_words(data, m.get("words") or [])
        if data.version is not None
        else "no IDF model yet: run <code>recengine reindex</code>"
    )
    live = max(1, c.live)
    return "".join(
        [
            "<h2>Corpus</h2><p>",
            _kpi("live articles", f"{c.live:,}"),
            _kpi("deleted", f"{c.deleted:,}"),
            _kpi("with features", f"{c.with_features:,}"),
            _kpi("in duplicate clusters", f"{data.in_clusters:,}"),
            "</p><h2>Suppressed recommendations</h2><p>",
            _kpi("duplicates hidden (not canonical)", f"{data.hidden_duplicates:,}"),
            _kpi("(article, duplicate) pairs suppressed", f"{data.suppressed_pairs:,}"),
            _kpi("articles with a duplicate", f"{data.in_clusters / live:.1%}"),
            f"</p><p>{model}. A cluster of s articles hides s − 1 copies from every "
            "member's related list: s(s − 1) recommendations suppressed.</p>",
        ]
    )


def _neighbours(data: ReportData) -> str:
    n = len(data.nn_distances)
    if not n:
        return "<h2>Nearest neighbours</h2><p>Fewer than two articles with features.</p>"
    k = data.hamming_k
    return (
        "<h2>Nearest neighbours</h2><img src='nn_hamming.png' alt='histogram' width='100%'>"
        f"<p>{n:,} articles sampled; {data.near_fraction:.1%} have another article's "
        f"fingerprint within k = {k} bits (<code>features.hamming_k</code>), median distance "
        f"{int(np.median(data.nn_distances))}. Fingerprints this close make a pair a "
        "<i>candidate</i>, as do passages of text the two share (which finds excerpts, digests "
        "and edited reposts many bits away); a candidate is a near-duplicate only when the "
        "texts themselves pass the check (resemblance or containment of their shingles). So "
        "a close fingerprint is not a verdict, and cluster members lie at any distance "
        "(below).</p>"
    )


def _clusters(data: ReportData, site: str | None = None) -> str:
    e = html.escape
    if not data.cluster_sizes:
        return "<h2>Largest clusters</h2><p>No near-duplicate clusters are stored.</p>"
    rows = []
    for c in data.largest:
        members = "<br>".join(
            f"<span class='muted'>{d} bits</span> {_link(data, site, ext, title)} "
            f"<span class='muted'>({e(ext)})</span>"
            for ext, title, d in c.members
        )
        more = c.size - 1 - len(c.members)
        canonical = _link(data, site, *c.canonical)
        rows.append(
            f"<tr><td class='num'>{c.size}</td><td><b>{canonical}</b> <span "
            f"class='muted'>({e(c.canonical[0])})</span><br>{members}"
            + (f"<br><span class='muted'>… and {more} more</span>" if more > 0 else "")
            + "</td></tr>"
        )
    return (
        "<h2>Cluster sizes</h2><img src='cluster_sizes.png' alt='cluster sizes' width='100%'>"
        + _member_distances(data)
        + "<h2>Largest clusters</h2><table><tr><th class='num'>size</th>"
        "<th>canonical title (bold), then members by distance</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def _member_distances(data: ReportData) -> str:
    found = np.asarray(data.member_distances)
    if not len(found):
        return ""
    far = int((found > data.hamming_k).sum())
    return (
        f"<p>Members lie {int(found.min())}-{int(found.max())} bits from their canonical's "
        f"fingerprint (median {int(np.median(found))}); {far:,} of {len(found):,} more than "
        f"k = {data.hamming_k} bits away (found through shared passages, or joined by an "
        "editor's override), each kept because the texts passed the check.</p>"
    )


def _terms(data: ReportData) -> str:
    if not data.top_terms:
        return ""
    top = max(1, data.top_terms[0][1])
    rows = "".join(
        f"<tr><td>{_in_corpus_lang(data, term)}</td><td class='num'>{df:,}</td>"
        f"<td class='num'>{idf:.2f}</td>"
        f"<td><span class='bar' style='width:{300 * df / top:.0f}px'></span></td></tr>"
        for term, df, idf in data.top_terms
    )
    return (
        "<h2>Top terms</h2><p>Terms in the most documents (document frequency), with their "
        "IDF.</p><table><tr><th>term</th><th class='num'>documents</th><th class='num'>idf</th>"
        f"<th></th></tr>{rows}</table>"
    )
