"""Click-through rates of the related lists, by A/B variant and by slot, for the report.

From the daily feedback counters (``storage.rows.feedback``) of a range of days: CTR = clicks /
impressions, with a 95 % Wilson score interval (right near 0, where CTRs live, unlike the
normal approximation). Each variant is compared with the first one listed (the control) by a
two-sided two-proportion z-test on their totals; a difference whose p-value is 0.05 or more is
stated as not significant, and with fewer than :data:`MIN_IMPRESSIONS` impressions on either
side no test is made at all (too little data to say anything).

A click can arrive without its impression (a reader clicking before half the list was on
screen, or a browser without IntersectionObserver): a rate is capped at 1.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Z95 = 1.959963984540054
ALPHA = 0.05
MIN_IMPRESSIONS = 100


@dataclass(frozen=True)
class Rate:
    """Clicks over impressions with its 95 % interval."""

    impressions: int
    clicks: int

    @property
    def ctr(self) -> float:
        return min(1.0, self.clicks / self.impressions) if self.impressions else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(min(self.clicks, self.impressions), self.impressions)


@dataclass(frozen=True)
class Comparison:
    """A variant against the control: difference of CTRs, p-value, verdict."""

    variant: str
    control: str
    difference: float
    p_value: float | None  # None: too few impressions to test

    @property
    def statement(self) -> str:
        if self.p_value is None:
            return (
                f"{self.variant} vs {self.control}: too few impressions to compare "
                f"(fewer than {MIN_IMPRESSIONS} on a side)"
            )
        verdict = "significant" if self.p_value < ALPHA else "NOT significant: no difference shown"
        return (
            f"{self.variant} vs {self.control}: CTR difference {self.difference:+.2%}, "
            f"p = {self.p_value:.3g} ({verdict} at the 5 % level)"
        )


@dataclass(frozen=True)
class CtrReport:
    days: tuple[str, str]
    by_variant: dict[str, Rate]
    by_slot: dict[str, dict[int, Rate]]  # variant -> slot -> rate
    comparisons: list[Comparison]
    # variant -> what its ranking changes (``recommend.ranking.Ranking.describe``)
    described: dict[str, str] = field(default_factory=dict)


def wilson(successes: int, trials: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion (``(0, 1)`` with no trials)."""
    if trials <= 0:
        return 0.0, 1.0
    p = successes / trials
    denominator = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def two_proportion_p(a: Rate, b: Rate) -> float | None:
    """Two-sided p-value of the pooled two-proportion z-test (None: too few impressions)."""
    if min(a.impressions, b.impressions) < MIN_IMPRESSIONS:
        return None
    ca, cb = min(a.clicks, a.impressions), min(b.clicks, b.impressions)
    pooled = (ca + cb) / (a.impressions + b.impressions)
    se = math.sqrt(pooled * (1 - pooled) * (1 / a.impressions + 1 / b.impressions))
    if se == 0:
        return 1.0
    z = (ca / a.impressions - cb / b.impressions) / se
    return math.erfc(abs(z) / math.sqrt(2))


def ctr_report(
    rows: Iterable[tuple[str, int, int, int]],
    variants: Sequence[str],
    days: tuple[str, str],
    described: Mapping[str, str] | None = None,
) -> CtrReport:
    """From ``(variant, slot, impressions, clicks)`` totals; ``variants`` in settings order
    (the first is the control; variants with counters but no longer configured follow);
    ``described``: what each configured variant's ranking changes."""
    by_slot: dict[str, dict[int, Rate]] = {}
    for variant, slot, impressions, clicks in rows:
        by_slot.setdefault(variant, {})[slot] = Rate(impressions, clicks)
    order = [v for v in variants if v in by_slot] + sorted(set(by_slot) - set(variants))
    by_variant = {
        v: Rate(
            sum(r.impressions for r in by_slot[v].values()),
            sum(r.clicks for r in by_slot[v].values()),
        )
        for v in order
    }
    comparisons = []
    if order:
        control = by_variant[order[0]]
        for v in order[1:]:
            rate = by_variant[v]
            p = two_proportion_p(rate, control)
            comparisons.append(Comparison(v, order[0], rate.ctr - control.ctr, p))
    named = {v: (described or {}).get(v, "no longer configured") for v in order}
    return CtrReport(days, by_variant, {v: by_slot[v] for v in order}, comparisons, named)


def plot_ctr(report: CtrReport, path: Path, plt: Any) -> None:
    """CTR by slot, one series per variant, with the 95 % intervals as error bars."""
    fig, ax = plt.subplots(figsize=(8, 3.2), dpi=110)
    width = 0.8 / max(1, len(report.by_slot))
    for n, (variant, slots) in enumerate(report.by_slot.items()):
        xs = sorted(slots)
        ys = [slots[x].ctr for x in xs]
        low = [slots[x].ctr - slots[x].interval[0] for x in xs]
        high = [slots[x].interval[1] - slots[x].ctr for x in xs]
        ax.bar(
            [x + n * width for x in xs], ys, width=width, yerr=[low, high], capsize=2, label=variant
        )
    ax.set_xlabel("slot (0 = first link of the list)")
    ax.set_ylabel("CTR (clicks / impressions)")
    ax.set_title("Click-through rate by slot and variant (95 % Wilson intervals)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def render_ctr(report: CtrReport | None) -> str:
    """The report's section (HTML, every value escaped)."""
    e = html.escape
    if report is None or not report.by_variant:
        return (
            "<h2>Reader feedback</h2><p>No impressions or clicks are counted yet (the widget "
            "reports them to <code>POST /api/v1/feedback</code>).</p>"
        )
    rows = "".join(
        f"<tr><td>{e(v)}</td><td>{e(report.described.get(v, ''))}</td>"
        f"<td class='num'>{r.impressions:,}</td><td class='num'>"
        f"{r.clicks:,}</td><td class='num'>{r.ctr:.2%}</td><td class='num'>"
        f"{r.interval[0]:.2%} – {r.interval[1]:.2%}</td></tr>"
        for v, r in report.by_variant.items()
    )
    statements = "".join(f"<li>{e(c.statement)}</li>" for c in report.comparisons)
    if not report.comparisons:
        statements = "<li>one variant only: nothing to compare</li>"
    return (
        f"<h2>Reader feedback</h2><p class='muted'>{e(report.days[0])} to {e(report.days[1])}"
        "</p><table><tr><th>variant</th><th>ranking</th><th class='num'>impressions</th>"
        "<th class='num'>"
        "clicks</th><th class='num'>CTR</th><th class='num'>95 % interval</th></tr>"
        f"{rows}</table><ul>{statements}</ul>"
        "<img src='ctr_by_slot.png' alt='CTR by slot and variant' width='100%'>"
    )
