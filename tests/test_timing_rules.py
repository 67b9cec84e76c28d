"""The rules that decide when timing stops and when one config beats another, at their edges:
each case sits just inside or just outside a threshold, so loosening or flipping one fails here."""

from __future__ import annotations

import random

from workbench.bench import timing_rules as rules
from workbench.bench.timing_rules import NOISE, beats


def noisy(median: float, spread: float, n: int, seed: int = 0) -> list[float]:
    """n samples around `median`, uniformly +-spread (a seeded draw: the same every run)."""
    rng = random.Random(seed)
    return [median * (1 + rng.uniform(-spread, spread)) for _ in range(n)]


def test_timing_takes_at_least_the_minimum_and_at_most_the_maximum_samples():
    assert rules.stop([1.0] * (rules.MIN_SAMPLES - 1), 0.0, None) == ""
    assert rules.stop([1.0] * rules.MIN_SAMPLES, 0.0, None) == "precise"
    spread = noisy(1.0, 0.5, rules.MAX_SAMPLES)
    assert rules.stop(spread, 0.0, None) == "samples"
    assert rules.stop(spread[:-1], 0.0, None) == ""  # too noisy to be precise, budget left


def test_precise_is_half_a_percent_standard_error_of_the_median():
    tight = noisy(1.0, 0.004, 20)
    loose = noisy(1.0, 0.2, 20)
    assert rules.stop(tight, 0.0, None) == "precise"
    assert rules.stop(loose, 0.0, None) == ""


def test_a_config_stops_early_only_when_clearly_slower_than_the_best():
    times = noisy(1.0, 0.2, 20)
    p20 = rules.quantiles(times)[0]
    just_slower = p20 / (1 + rules.LOSER) * 0.999  # p20 just above best * 1.10
    just_not = p20 / (1 + rules.LOSER) * 1.001
    assert rules.stop(times, 0.0, just_slower) == "clearly slower"
    assert rules.stop(times, 0.0, just_not) == ""
    assert rules.stop(times, rules.BUDGET_MS, just_not) == "budget"
    assert rules.stop(times, rules.BUDGET_MS * 0.99, just_not) == ""


def test_a_tuning_is_stale_only_when_the_other_config_clearly_wins():
    """[p50, p20, p80]: `a` beats `b` when a's p80 is under b's p20 and a's median is at least
    NOISE (2 %) lower; a faster median inside the noise, or overlapping spreads, is no win."""
    b = [1.00, 0.99, 1.01]
    assert beats([0.97, 0.96, 0.98], b)
    assert not beats([0.97, 0.96, 0.99], b)  # p80 touches b's p20
    assert not beats([1.0 - NOISE * 0.9, 0.97, 0.975], b)  # only 1.8 % faster
    assert beats([1.0 - NOISE * 1.1, 0.97, 0.975], b)
