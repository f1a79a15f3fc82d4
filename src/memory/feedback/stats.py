"""Per-version statistics of rewards and the rule for automatic promotion (pure).

* Mean, count and a two-sided **95 % Student-t confidence interval** of the
  mean reward, from the count, sum and sum of squares the store aggregates:
  ``mean ± t(0.975, n − 1) · s / √n`` with the sample standard deviation
  ``s``, clipped to [0, 1]. With ``n < 2`` there is no interval (None).
  The t quantiles come from a table (df 1–30, 40, 60, 120, ∞), linear in
  1/df between its rows — no SciPy needed.
* :func:`candidate_beats_active` — the auto-promotion rule: a candidate
  beats the active version when **both** have at least ``min_count`` scored
  conversations and the candidate's **lower** 95 % bound is above the
  active version's **mean**. A one-sided check against a point, so a lucky
  small streak does not promote a prompt; documented in docs/feedback.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from memory.feedback.types import VersionAggregate

__all__ = ["Interval", "t_quantile", "interval", "candidate_beats_active", "DEFAULT_MIN_COUNT"]

#: Scored conversations each side needs before automatic promotion compares them.
DEFAULT_MIN_COUNT = 10

# t(0.975, df) for df = 1..30, then 40, 60, 120 and infinity.
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip
_T975_TAIL = ((30, 2.042), (40, 2.021), (60, 2.000), (120, 1.980))
_Z975 = 1.960


def t_quantile(df: int) -> float:
    """The 0.975 quantile of Student's t with ``df`` degrees of freedom (df ≥ 1)."""
    if df < 1:
        raise ValueError("df must be at least 1")
    if df <= 30:
        return _T975[df - 1]
    points = [*_T975_TAIL, (math.inf, _Z975)]
    for (lo_df, lo_t), (hi_df, hi_t) in zip(points, points[1:], strict=False):
        if lo_df <= df <= hi_df:
            # linear in 1/df between table rows
            lo_x, hi_x, x = 1.0 / lo_df, (0.0 if hi_df == math.inf else 1.0 / hi_df), 1.0 / df
            return lo_t + (hi_t - lo_t) * (lo_x - x) / (lo_x - hi_x)
    return _Z975  # pragma: no cover - unreachable


@dataclass(frozen=True)
class Interval:
    """Mean reward of ``count`` conversations with its 95 % t interval (None bounds when count < 2)."""

    count: int
    mean: float | None
    low: float | None
    high: float | None


def interval(agg: VersionAggregate) -> Interval:
    """Mean and 95 % t interval from an aggregate (count, sum, sum of squares)."""
    n = agg.count
    if n == 0:
        return Interval(0, None, None, None)
    mean = agg.total / n
    if n < 2:
        return Interval(n, round(mean, 4), None, None)
    variance = max((agg.total_squares - n * mean * mean) / (n - 1), 0.0)
    half = t_quantile(n - 1) * math.sqrt(variance / n)
    return Interval(n, round(mean, 4), round(max(mean - half, 0.0), 4), round(min(mean + half, 1.0), 4))


def candidate_beats_active(
    candidate: VersionAggregate, active: VersionAggregate, *, min_count: int = DEFAULT_MIN_COUNT
) -> tuple[bool, str]:
    """Whether ``candidate`` should replace ``active`` (see the module docstring), and why (one sentence)."""
    c, a = interval(candidate), interval(active)
    if c.count < min_count or a.count < min_count:
        return False, (
            f"not enough scored conversations (candidate {c.count}, active {a.count}; need {min_count} each)"
        )
    assert c.low is not None and a.mean is not None
    if c.low > a.mean:
        return True, f"candidate lower 95% bound {c.low:.3f} > active mean {a.mean:.3f} (n={c.count} vs {a.count})"
    return False, f"candidate lower 95% bound {c.low:.3f} <= active mean {a.mean:.3f} (n={c.count} vs {a.count})"
