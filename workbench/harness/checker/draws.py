"""Outputs that are random draws, checked by their distribution (task.toml `[sampling]`).

A sampler's output cannot be compared with the oracle's: two correct samplers draw different values. What
can be checked is the law of the draws. For every draw the task's `intervals(outputs, inputs)` gives the
interval [F(x-), F(x)] of the target CDF at the drawn value x; a uniform drawn here, inside that
interval (the randomised probability integral transform), is exactly Uniform(0, 1) and independent of
the other draws when, and only when, the sampler draws from the target law with fresh randomness.

Three Kolmogorov-Smirnov tests at alpha / 3 each decide, once a workload holds enough draws:
- marginal: the pooled transforms are uniform (the law: a wrong filter, temperature or normalisation);
- across rows: twice the circular distance between the transforms of disjoint random pairs of rows of one
  call is uniform (rows drawn independently: one random number shared by a call's rows fails it);
- across seeds: one row drawn twice on the same inputs under two seeds gives the same value with probability
  q (the first value's probability, the width of its interval), independently across rows: the count of
  repeats is Poisson-binomial, and too many of them (a sampler whose draws ignore the seed) fail its upper
  tail. Transforms would not do here: where one value holds most of a row's mass its wide interval hides
  the repeat.
A draw with an empty interval (a value the distribution cannot produce) fails at once, with no test.
The checker's uniforms and pairings come from its own generator, seeded from the per-evaluation secret.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

import torch

# The Kolmogorov series converges fast: terms past this many are below float64's resolution.
_KS_TERMS = 100


def repeats_tail(observed: int, odds: torch.Tensor) -> float:
    """P(S >= observed) for S a sum of independent Bernoulli(odds) (the Poisson-binomial law, exactly)."""
    law = torch.zeros(odds.numel() + 1, dtype=torch.float64)
    law[0] = 1.0
    for n, q in enumerate(odds.double().tolist(), start=1):
        law[1 : n + 1] = law[1 : n + 1] * (1.0 - q) + law[0:n] * q
        law[0] *= 1.0 - q
    return float(law[observed:].sum().clamp(0.0, 1.0))


def ks_uniform(values: torch.Tensor) -> tuple[float, float]:
    """The Kolmogorov-Smirnov statistic D of `values` against Uniform(0, 1), and its p-value (Stephens'
    finite-sample correction to the asymptotic law, accurate to a few percent from n = 35 on)."""
    x = torch.sort(values.detach().to(torch.float64).flatten().cpu()).values
    n = x.numel()
    if n == 0:
        return 0.0, 1.0
    ranks = torch.arange(1, n + 1, dtype=torch.float64)
    d = max(float((ranks / n - x).max()), float((x - (ranks - 1) / n).max()))
    root = math.sqrt(n)
    lam = (root + 0.12 + 0.11 / root) * d
    if lam < 0.2:
        return d, 1.0
    total = sum((-1) ** (k - 1) * math.exp(-2.0 * k * k * lam * lam) for k in range(1, _KS_TERMS + 1))
    return d, min(1.0, max(0.0, 2.0 * total))


def generator_for(secret: int, *labels: object) -> torch.Generator:
    """A CPU generator seeded from the secret and labels: the checker's randomness, never the solution's."""
    hashed = hashlib.sha256(":".join([str(secret), *map(str, labels)]).encode()).digest()
    gen = torch.Generator()
    gen.manual_seed(int.from_bytes(hashed[:8], "little") & 0x7FFF_FFFF_FFFF_FFFF)
    return gen


class DrawsInvalid(ValueError):
    """A draw the target distribution cannot produce, or intervals that are not intervals."""


def transforms(intervals: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """One uniform per draw, inside its CDF interval. Raises DrawsInvalid for a draw outside the support."""
    lo, hi = intervals[:, 0].double().cpu(), intervals[:, 1].double().cpu()
    empty = ~(hi > lo)  # NaN included
    if bool(empty.any()):
        rows = torch.nonzero(empty).flatten()
        raise DrawsInvalid(
            f"{rows.numel()} of {lo.numel()} draws are values the target distribution gives probability 0 "
            f"(first at row {int(rows[0])})"
        )
    u = torch.rand(lo.numel(), generator=gen, dtype=torch.float64)
    return (lo + (hi - lo) * u).clamp(0.0, 1.0)


def closeness(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Twice the circular distance between two uniforms: Uniform(0, 1) when they are independent, near 0 when
    one was drawn from the other's randomness (the same token, so transforms within one interval)."""
    d = torch.remainder(a - b, 1.0)
    return 2.0 * torch.minimum(d, 1.0 - d)


def rejection_level(alpha: float) -> float:
    """The p-value below which one of the pool's three tests rejects the law: alpha shared among them."""
    return alpha / 3


@dataclass
class DrawTest:
    name: str
    n: int
    statistic: float
    p_value: float


@dataclass
class DrawPool:
    """The transforms of one workload's drawn output, pooled over its checked calls."""

    secret: int
    workload: str
    output: str
    marginal: list[torch.Tensor] = field(default_factory=list)
    across_rows: list[torch.Tensor] = field(default_factory=list)
    repeats: list[torch.Tensor] = field(default_factory=list)  # per paired row: 1.0 where the second draw repeated
    repeat_odds: list[torch.Tensor] = field(default_factory=list)  # and the probability that it would
    calls: int = 0

    @property
    def draws(self) -> int:
        return sum(t.numel() for t in self.marginal)

    @property
    def paired(self) -> int:
        return sum(t.numel() for t in self.repeats)

    def add(self, intervals: torch.Tensor, partner: torch.Tensor | None = None) -> torch.Tensor:
        """Pool one call's draws (`partner`: the intervals of the same inputs' draws under another seed, where
        this call is the second of such a pair). Returns the call's intervals (float64, on the CPU)."""
        intervals = intervals.detach().double().cpu()
        self.calls += 1
        gen = generator_for(self.secret, self.workload, self.output, self.calls)
        u = transforms(intervals, gen)
        self.marginal.append(u)
        if u.numel() >= 2:
            order = torch.randperm(u.numel(), generator=gen)
            half = u.numel() // 2
            self.across_rows.append(closeness(u[order[:half]], u[order[half : 2 * half]]))
        if partner is not None and partner.shape == intervals.shape:
            self.repeats.append((intervals == partner).all(dim=1).double())
            self.repeat_odds.append((partner[:, 1] - partner[:, 0]).clamp(0.0, 1.0))
        return intervals

    def tests(self) -> list[DrawTest]:
        found = []
        for name, parts in (("marginal", self.marginal), ("across rows", self.across_rows)):
            if parts:
                values = torch.cat(parts)
                d, p = ks_uniform(values)
                found.append(DrawTest(name, values.numel(), d, p))
        if self.repeats:
            same, odds = torch.cat(self.repeats), torch.cat(self.repeat_odds)
            found.append(DrawTest("across seeds", same.numel(), float(same.sum()), repeats_tail(int(same.sum()), odds)))
        return found

    def failure(self, alpha: float, tests: list[DrawTest] | None = None) -> str | None:
        """Why the pooled draws reject the target law at level alpha (None: they do not); `tests`: the pool's
        tests() when the caller has them already."""
        level = rejection_level(alpha)
        for test in self.tests() if tests is None else tests:
            if test.p_value < level and test.name == "across seeds":
                expected = float(torch.cat(self.repeat_odds).sum())
                return (
                    f"output {self.output}: the draws do not change with the seed ({int(test.statistic)} of {test.n} rows "
                    f"drew the same value under two seeds, {expected:.1f} expected; p = {test.p_value:.2g} < {level:.2g})"
                )
            if test.p_value < level:
                return (
                    f"output {self.output}: the draws do not follow the task's distribution ({test.name}: "
                    f"Kolmogorov-Smirnov D = {test.statistic:.4f} over {test.n} draws, p = {test.p_value:.2g} "
                    f"< {level:.2g})"
                )
        return None
