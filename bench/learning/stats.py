"""Intervals for the held-out comparison: Wilson's for a pass rate, Newcombe's (hybrid score) for the difference of
two independent pass rates, and a normal interval for a mean reward. 95% throughout (z = 1.959964)."""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["Z95", "mean_interval", "newcombe_interval", "wilson_interval"]

Z95 = 1.959963984540054


def wilson_interval(successes: int, trials: int, *, z: float = Z95) -> tuple[float, float]:
    """Wilson's score interval of a proportion; (0, 1) when there are no trials."""
    if trials == 0:
        return 0.0, 1.0
    p = successes / trials
    denominator = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def newcombe_interval(
    successes_a: int, trials_a: int, successes_b: int, trials_b: int, *, z: float = Z95
) -> tuple[float, float]:
    """The interval of ``p_a - p_b`` from the two Wilson intervals (Newcombe 1998, method 10)."""
    p_a = successes_a / trials_a if trials_a else 0.0
    p_b = successes_b / trials_b if trials_b else 0.0
    low_a, high_a = wilson_interval(successes_a, trials_a, z=z)
    low_b, high_b = wilson_interval(successes_b, trials_b, z=z)
    difference = p_a - p_b
    below = math.sqrt((p_a - low_a) ** 2 + (high_b - p_b) ** 2)
    above = math.sqrt((high_a - p_a) ** 2 + (p_b - low_b) ** 2)
    return difference - below, difference + above


def mean_interval(values: Sequence[float], *, z: float = Z95) -> tuple[float, float, float]:
    """The mean and its normal-approximation interval (sample standard deviation); a point for fewer than 2."""
    n = len(values)
    if n == 0:
        return 0.0, 0.0, 0.0
    mean = sum(values) / n
    if n < 2:
        return mean, mean, mean
    spread = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = z * spread / math.sqrt(n)
    return mean, mean - half, mean + half
