"""Speculative decoding: a draft proposes ``k`` tokens, the target verifies them in one step.

Each decode step of a request computes ``k + 1`` tokens on the target (the last accepted token and
the ``k`` drafts) and emits 1 + the drafts accepted before the first rejection (the target's own
token replaces the rejected draft, or follows k accepted ones), at most what the request still
needs. Acceptance is drawn, not taken in expectation: each draft is accepted with probability
``alpha``, independently, from a generator seeded by ``(seed, request's local id)``, so a request's
tokens per step vary as a real engine's do (TPOT and ITL get their spread, and a request's length
in steps is a whole number), and a plain per-step loop draws the same numbers. The expected tokens
per step is (1 - alpha^(k+1)) / (1 - alpha).

Cost: the step computes ``k + 1`` tokens per decoder in the roofline (``Setup.step_time``) and the
drafts add ``k x draft_cost`` times a plain decode step of the same decoders over the same context
(a draft pass costs ``draft_cost`` of a target pass). At low load the step is memory-bound, so the
speedup in TPOT is (1 - alpha^(k+1)) / ((1 - alpha)(1 + k draft_cost)); as the batch grows the
k + 1 verified tokens make the step compute-bound and the speedup shrinks.

Decoders take ``k + 1`` tokens of the step budget each; the context grows by the tokens emitted.
With paged KV (``sim.kv.Paged``) the rule is vLLM V1's: k lookahead slots per allocation, and the
budget cuts decoders in running order (n < k + 1 tokens: n - 1 drafts, so fewer draws that step).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from sim.validate import check_int, check_number


@dataclass(frozen=True)
class Speculative:
    """k draft tokens per step, each accepted with probability alpha; a draft pass costs
    ``draft_cost`` of a target step; acceptance drawn from ``seed``."""

    k: int = 4
    alpha: float = 0.7
    draft_cost: float = 0.05
    seed: int = 0

    def __post_init__(self):
        check_int("Speculative.k", self.k, 1)
        check_number("Speculative.alpha", self.alpha, 0, strict=False, note="(acceptance rate, < 1)")
        if not self.alpha < 1:
            raise ValueError(f"Speculative.alpha must be in [0, 1), got {self.alpha!r}")
        check_number("Speculative.draft_cost", self.draft_cost, 0, strict=False,
                     note="(a draft pass as a fraction of a target step)")
        check_int("Speculative.seed", self.seed, 0)

    def tokens_per_step(self) -> float:
        """Expected tokens a decode step emits (no length cap)."""
        return (1 - self.alpha ** (self.k + 1)) / (1 - self.alpha)

    def speedup(self) -> float:
        """The closed form at low load: expected tokens per step over the step's relative cost."""
        return self.tokens_per_step() / (1 + self.k * self.draft_cost)

    def rng(self, request: int) -> random.Random:
        return random.Random(self.seed * 2**32 + request)

    def draw(self, rng: random.Random, remaining: int, drafts: int | None = None) -> int:
        """Tokens one step emits for a request that still needs ``remaining``, with ``drafts``
        drafts (default k; fewer where a token budget cut them, as vLLM V1 does)."""
        a, k, alpha = 0, self.k if drafts is None else drafts, self.alpha
        while a < k and rng.random() < alpha:
            a += 1
        return min(1 + a, remaining)

    def emissions(self, request: int, remaining: int, skip: int = 0, drafts: dict | None = None) -> list[int]:
        """Tokens emitted at each of a request's decode steps, until ``remaining`` are out.
        ``skip``: decode steps it already ran (before a preemption): their draws are consumed
        first, so a recomputed request continues its own stream, as one generator kept per
        request across preemptions does. ``drafts``: {decode step number: drafts} where fewer
        than k were scheduled (a token budget's cut)."""
        rng, out = self.rng(request), []
        for o in range(skip):
            self.draw(rng, 1, drafts.get(o) if drafts else None)
        o = skip
        while remaining > 0:
            e = self.draw(rng, remaining, drafts.get(o) if drafts else None)
            out.append(e)
            remaining -= e
            o += 1
        return out
