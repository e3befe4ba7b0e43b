"""Distributions of per-request token lengths (prompt or output), each drawn from a seed.

    fixed(500)                      every request 500 tokens
    uniform(100, 900)               whole numbers in [100, 900], each equally likely
    normal(500, 150, low=1)         rounded normal, clipped to [low, high]
    lognormal(500, cv=1.0)          rounded lognormal with that mean and coefficient of variation
                                    before clipping (long-tailed, like real chat outputs)
    empirical([120, 480, 2000])     resampled with replacement from observed lengths

Wherever the workloads take a length, a plain int means ``fixed(int)``. ``draw(n, rng)`` returns a
list of ints >= 1 from a ``numpy.random.Generator``; ``mean`` is the expected value (used for
throughput bounds and cost per token).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sim.validate import check_int, check_number


class Length:
    """A distribution of whole token counts >= 1."""

    mean: float
    high: int | None = None

    def draw(self, n: int, rng: np.random.Generator) -> list[int]:
        raise NotImplementedError


@dataclass(frozen=True)
class Fixed(Length):
    value: int

    def __post_init__(self):
        check_int("length", self.value, 1)

    @property
    def mean(self) -> float:
        return float(self.value)

    @property
    def high(self) -> int:
        return int(self.value)

    def draw(self, n, rng):
        return [int(self.value)] * n


@dataclass(frozen=True)
class Uniform(Length):
    low: int
    high: int

    def __post_init__(self):
        check_int("uniform low", self.low, 1)
        check_int("uniform high", self.high, int(self.low))

    @property
    def mean(self) -> float:
        return (self.low + self.high) / 2

    def draw(self, n, rng):
        return rng.integers(int(self.low), int(self.high) + 1, size=n).tolist()


@dataclass(frozen=True)
class Clipped(Length):
    """Rounded draws of a normal or lognormal, clipped to [low, high] (high None: no upper clip)."""

    kind: str           # "normal" or "lognormal"
    mu: float
    sigma: float
    low: int = 1
    high: int | None = None

    def __post_init__(self):
        check_int(f"{self.kind} low", self.low, 1)
        if self.high is not None:
            check_int(f"{self.kind} high", self.high, int(self.low))

    @property
    def mean(self) -> float:
        # Monte Carlo with a fixed seed: exact enough for bounds and costs, and deterministic.
        return float(np.mean(self.draw(20000, np.random.default_rng(12345))))

    def draw(self, n, rng):
        if self.kind == "normal":
            x = rng.normal(self.mu, self.sigma, size=n)
        else:
            x = rng.lognormal(self.mu, self.sigma, size=n)
        hi = np.inf if self.high is None else self.high
        return np.clip(np.rint(x), self.low, hi).astype(np.int64).tolist()


@dataclass(frozen=True)
class Empirical(Length):
    samples: tuple

    def __post_init__(self):
        if len(self.samples) == 0:
            raise ValueError("empirical samples must not be empty")
        for i, s in enumerate(self.samples):
            check_int(f"empirical samples[{i}]", s, 1)

    @property
    def mean(self) -> float:
        return float(np.mean(self.samples))

    @property
    def high(self) -> int:
        return int(max(self.samples))

    def draw(self, n, rng):
        return np.asarray(self.samples, dtype=np.int64)[rng.integers(0, len(self.samples), size=n)].tolist()


def fixed(value: int) -> Fixed:
    return Fixed(value)


def uniform(low: int, high: int) -> Uniform:
    return Uniform(low, high)


def normal(mean: float, std: float, *, low: int = 1, high: int | None = None) -> Clipped:
    _check_real("normal mean", mean, 0)
    _check_real("normal std", std, 0)
    return Clipped("normal", float(mean), float(std), low, high)


def lognormal(mean: float, cv: float = 1.0, *, low: int = 1, high: int | None = None) -> Clipped:
    """Lognormal with this mean and coefficient of variation (std / mean) before clipping."""
    _check_real("lognormal mean", mean, 0, strict=True)
    _check_real("lognormal cv", cv, 0)
    sigma2 = math.log1p(cv * cv)
    return Clipped("lognormal", math.log(mean) - sigma2 / 2, math.sqrt(sigma2), low, high)


def empirical(samples) -> Empirical:
    return Empirical(tuple(int(s) if float(s).is_integer() else s for s in samples))


def as_length(name: str, value) -> Length:
    """An int becomes ``fixed``; a ``Length`` passes; anything else is a ValueError naming ``name``."""
    if isinstance(value, Length):
        return value
    try:
        check_int(name, value, 1)
    except ValueError:
        raise ValueError(f"{name} must be a whole number >= 1 or a sim.lengths distribution "
                         f"(fixed, uniform, normal, lognormal, empirical), got {value!r}") from None
    return Fixed(int(value))


def draw_lengths(n: int, input_len, output_len, seed: int) -> tuple[tuple, tuple]:
    """``n`` prompt and ``n`` output lengths (ints or distributions), each on a stream of its own:
    numpy's generator seeded with ``[seed, 1]`` for prompts and ``[seed, 2]`` for outputs, so
    changing one distribution never moves the other's draws (nor any arrival time)."""
    check_int("seed", seed, None)
    inp = as_length("input_len", input_len).draw(n, np.random.default_rng([int(seed) % 2**63, 1]))
    out = as_length("output_len", output_len).draw(n, np.random.default_rng([int(seed) % 2**63, 2]))
    return tuple(inp), tuple(out)


def _check_real(name, value, low, strict=False):
    check_number(name, value, low, strict=strict)
