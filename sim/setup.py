"""One serving instance, described by the numbers the step rule needs.

The fields and defaults are the handbook's, so its code runs unchanged. Every field is checked when
the object is built: a bad value raises ``ValueError`` naming the field and the allowed range.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass, fields
from functools import lru_cache

import numpy as np


@dataclass(frozen=True)
class Setup:
    """A serving instance: model size, memory, hardware roofline and scheduler limits.

    params                  parameters read per token (the active ones for an MoE model)
    weight_bytes            bytes of weights read once per step
    kv_bytes_per_token      KV-cache bytes one token of context occupies
    kv_capacity_tokens      tokens of KV cache the instance can hold
    peak_flops              dense FLOP/s of the whole instance (all its GPUs)
    bandwidth               memory bandwidth of the whole instance, bytes/s
    mfu                     fraction of peak_flops reached by the step's matmuls, in (0, 1]
    step_overhead           fixed seconds added to every step (launch, scheduling, communication)
    max_num_batched_tokens  token budget of one step (chunked prefill)
    max_num_seqs            most requests running at once
    comm_s_per_token        seconds added per token the step computes, after the roofline: work
                            that streams each token's activations outside the GEMMs (tensor-parallel
                            all-reduces moving them between GPUs; in the calibrated presets also
                            the norms, RoPE and quantisation kernels between the GEMMs,
                            ``sim.presets.elementwise``); 0 in the handbook's model
    kv_serial               fraction of the KV-cache read that runs after the matmuls instead of
                            under them, in [0, 1]: attention kernels stream the KV cache between
                            the GEMMs, so their time adds to the step (1) rather than hiding under
                            the compute bound (0, the handbook's roofline)
    attn_flops_per_pair     FLOPs of prefill attention per (prompt token, earlier token) pair over
                            the whole instance: 4 x layers x query heads x head dim (QK^T and PV);
                            0 in the handbook's model, which counts only the matmuls
    attn_mfu                fraction of peak_flops reached by prefill attention, in (0, 1]
    kv_bandwidth_ratio      speed of the KV-cache read relative to ``bandwidth`` (attention kernels
                            stream the cache at their own fraction of HBM bandwidth), in (0, 4];
                            1 in the handbook's model
    roofline_p              how the FLOPs and the memory traffic combine: 0 (the handbook's
                            roofline) takes the larger; 2, 4 or 8 their p-norm (compute**p +
                            memory**p) ** (1/p), a smooth roofline: GEMMs near the ridge point (a
                            few hundred tokens per step) run below both bounds, as the measured
                            kernel tables show. Powers of two only: squares and square roots are
                            exactly rounded, so every engine path gets the same bits
    host_s_per_seq          seconds of host work added per decoding sequence in the step (its
                            scheduling, sampling and output processing); 0 in the handbook's model
    comm_curve              None, or knots ((tokens, seconds), ...), tokens increasing: seconds of
                            communication a step of that many tokens adds, linear between knots,
                            the first knot's seconds below it, the last segment continued past the
                            last (``comm_seconds``). Where a measured table is not a straight line
                            in bytes (an all-reduce's latency-bound small messages and its
                            bandwidth-bound large ones), it stands for ``comm_s_per_token`` and the
                            all-reduces' share of ``step_overhead``; None in the handbook's model
    kv                      KV policy: None (the handbook's whole reservation at admission),
                            "paged" or a ``sim.kv.Paged`` (blocks, preemption); see sim/kv/paged.py
    prefix_cache            None, or a ``sim.kv.PrefixCache``: keep finished requests' KV blocks and
                            skip cached prompt tokens' compute (needs ``kv`` paged)
    speculative             None, or a ``sim.speculative.Speculative`` (draft tokens per step,
                            acceptance rate, draft cost); with paged KV as vLLM V1 (see
                            ``_check_speculative_paged`` for the combinations modelled)
    """

    params: float
    weight_bytes: float
    kv_bytes_per_token: float
    kv_capacity_tokens: int
    peak_flops: float = 989e12
    bandwidth: float = 3.35e12
    mfu: float = 0.5
    step_overhead: float = 0.5e-3
    max_num_batched_tokens: int = 8192
    max_num_seqs: int = 256
    comm_s_per_token: float = 0.0
    kv_serial: float = 0.0
    attn_flops_per_pair: float = 0.0
    attn_mfu: float = 0.5
    kv_bandwidth_ratio: float = 1.0
    roofline_p: float = 0.0
    host_s_per_seq: float = 0.0
    comm_curve: tuple | None = None
    kv: object = None
    prefix_cache: object = None
    speculative: object = None

    def __post_init__(self) -> None:
        _check_features(self)
        object.__setattr__(self, "comm_curve", _checked_curve(self.comm_curve))
        for f in fields(self):
            if f.name in FEATURES or f.name == "comm_curve":
                continue
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"Setup.{f.name} must be a number, got {value!r}")
            if not math.isfinite(value):
                raise ValueError(f"Setup.{f.name} must be finite, got {value!r}")
        _positive(self, "params", "peak_flops", "bandwidth")
        _at_least(self, 0, "weight_bytes", "kv_bytes_per_token", "step_overhead", "comm_s_per_token",
                 "attn_flops_per_pair", "host_s_per_seq")
        _whole_at_least(self, 1, "kv_capacity_tokens", "max_num_batched_tokens", "max_num_seqs")
        for name in ("mfu", "attn_mfu"):
            if not 0 < getattr(self, name) <= 1:
                raise ValueError(f"Setup.{name} must be in (0, 1], got {getattr(self, name)!r}")
        if not 0 < self.kv_bandwidth_ratio <= 4:
            raise ValueError(f"Setup.kv_bandwidth_ratio must be in (0, 4], got {self.kv_bandwidth_ratio!r}")
        if not 0 <= self.kv_serial <= 1:
            raise ValueError(f"Setup.kv_serial must be in [0, 1], got {self.kv_serial!r}")
        if self.roofline_p not in ROOFLINE_P:
            raise ValueError(f"Setup.roofline_p must be one of {ROOFLINE_P} (0: the larger of FLOPs and "
                             f"memory; 2, 4, 8: their p-norm, a smooth roofline), got {self.roofline_p!r}")

    def replace(self, **changes) -> "Setup":
        """A copy with some fields changed (checked like a new Setup)."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        unknown = set(changes) - set(values)
        if unknown:
            raise ValueError(f"Setup has no field(s) {sorted(unknown)}; fields are {sorted(values)}")
        values.update(changes)
        return Setup(**values)

    def roofline_terms(self, tokens, context, pairs=0):
        """The step time's three terms for ``tokens`` computed over ``context`` cached tokens, with
        ``pairs`` (query, key) pairs of prefill attention: (FLOPs of the matmuls at ``mfu`` and of
        prefill attention at ``attn_mfu``; weights plus the overlapped part of the KV read; the KV
        read that runs after the matmuls). Scalars or numpy arrays."""
        compute = 2 * self.params * tokens / (self.peak_flops * self.mfu)
        if self.attn_flops_per_pair:
            compute = compute + self.attn_flops_per_pair * pairs / (self.peak_flops * self.attn_mfu)
        kv = self.kv_bytes_per_token * context / self.kv_bandwidth_ratio     # bytes at weight-read speed
        memory = (self.weight_bytes + kv * (1 - self.kv_serial)) / self.bandwidth
        serial = kv * self.kv_serial / self.bandwidth
        return compute, memory, serial

    def step_time(self, tokens: int, context: int, pairs: int = 0, decoders: int = 0) -> float:
        """Seconds of one step that computes ``tokens`` tokens over ``context`` cached tokens.

        The roofline: the slower of the FLOPs (matmuls at ``mfu`` of peak, plus ``pairs`` query-key
        pairs of prefill attention at ``attn_mfu``) and reading the weights plus the whole KV cache
        once (``roofline_p`` > 0: their p-norm instead of the larger), then the fixed overhead, then
        the communication time of the step's tokens (``comm_s_per_token``, and ``comm_curve``'s
        seconds at that many tokens) plus the host time of its ``decoders`` decoding sequences
        (``host_s_per_seq``). With ``kv_serial`` = s, only (1 - s)
        of the KV read sits inside the roofline and the rest is added after it (the attention
        kernels run between the GEMMs). With the added terms at 0 the result is exactly the
        handbook's, bit for bit.
        """
        compute, memory, serial = self.roofline_terms(tokens, context, pairs)
        bound = max(compute, memory) if self.roofline_p == 0 else smooth_max(compute, memory, self.roofline_p, math.sqrt)
        return bound + serial + self.step_overhead + self._per_step(tokens, decoders)

    def step_times(self, tokens, context, pairs=0, decoders=0) -> np.ndarray:
        """``step_time`` over numpy arrays (or a scalar and an array), with the same float operations."""
        compute, memory, serial = self.roofline_terms(tokens, context, pairs)
        bound = (np.maximum(compute, memory) if self.roofline_p == 0
                 else smooth_max(compute, memory, self.roofline_p, np.sqrt))
        return bound + serial + self.step_overhead + self._per_step(tokens, decoders)

    def _per_step(self, tokens, decoders):
        """The step's communication plus its sequences' host time (the engines' quiet loops add
        this very sum, ``comm * D + host * D (+ curve(D))``, for D decoders)."""
        if self.host_s_per_seq:
            per_step = self.comm_s_per_token * tokens + self.host_s_per_seq * decoders
        else:
            per_step = self.comm_s_per_token * tokens
        if self.comm_curve is not None:
            return per_step + self.comm_seconds(tokens)
        return per_step

    def comm_seconds(self, tokens):
        """``comm_curve``'s seconds for a step of ``tokens`` tokens (a scalar or a numpy array);
        0 without a curve. The knot arrays (``curve_arrays``) are what the compiled loops read, with
        the same operations: y[i] + (tokens - x[i]) * slope[i] for the last knot x[i] <= tokens."""
        if self.comm_curve is None:
            return 0.0 * tokens
        if isinstance(tokens, np.ndarray):
            x, y, slope = curve_arrays(self.comm_curve)
            i = np.searchsorted(x, tokens, side="right") - 1
            j = np.maximum(i, 0)
            return np.where(i < 0, y[0], y[j] + (tokens - x[j]) * slope[j])
        x, y, slope = self.comm_curve.lines
        i = bisect_right(x, tokens) - 1
        if i < 0:
            return y[0]
        return y[i] + (tokens - x[i]) * slope[i]


@lru_cache(maxsize=64)
def curve_knots(curve: tuple) -> tuple[tuple, tuple, tuple]:
    """(tokens, seconds, slope after each knot) of a checked ``comm_curve``, as tuples of floats;
    the last knot's slope is the last segment's (the curve continues along it)."""
    x = tuple(k[0] for k in curve)
    y = tuple(k[1] for k in curve)
    slope = tuple((y[i + 1] - y[i]) / (x[i + 1] - x[i]) for i in range(len(x) - 1))
    return x, y, slope + slope[-1:]


@lru_cache(maxsize=64)
def curve_arrays(curve: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``curve_knots`` as read-only float64 arrays (the same floats)."""
    arrays = tuple(np.array(v, dtype=float) for v in curve_knots(curve))
    for a in arrays:
        a.flags.writeable = False
    return arrays


def curve_min_per_token(setup: "Setup", low: int, high: int) -> float:
    """The least of ``comm_seconds(t) / t`` over whole tokens t in [low, high] (>= 1), for bounds:
    on each segment a + b t over t is monotone, so it is reached at a knot or an end."""
    if setup.comm_curve is None:
        return 0.0
    x, _, _ = curve_arrays(setup.comm_curve)
    candidates = {low, high}
    for knot in x:
        for t in (math.floor(knot), math.ceil(knot)):
            if low <= t <= high:
                candidates.add(int(t))
    return min(setup.comm_seconds(t) / t for t in candidates)


def _checked_curve(curve):
    """``comm_curve`` as a tuple of (float tokens, float seconds), or ValueError naming the rule."""
    if curve is None:
        return None
    what = "Setup.comm_curve must be None or knots ((tokens, seconds), ...)"
    try:
        knots = tuple(tuple(k) for k in curve)
    except TypeError:
        raise ValueError(f"{what}, got {curve!r}") from None
    if len(knots) < 2 or any(len(k) != 2 for k in knots):
        raise ValueError(f"{what}: at least two (tokens, seconds) pairs, got {curve!r}")
    out = []
    for i, (tokens, seconds) in enumerate(knots):
        for name, v in (("tokens", tokens), ("seconds", seconds)):
            number = not isinstance(v, bool) and isinstance(v, (int, float, np.integer, np.floating))
            if not number or not math.isfinite(v) or v < 0:
                raise ValueError(f"Setup.comm_curve[{i}] {name} must be a finite number >= 0, got {v!r}")
        if out and not tokens > out[-1][0]:
            raise ValueError(f"Setup.comm_curve's tokens must increase: knot {i} has {tokens!r} after {out[-1][0]!r}")
        out.append((float(tokens), float(seconds)))
    if out[-1][1] < out[-2][1]:
        raise ValueError("Setup.comm_curve's last two knots must not decrease in seconds (the curve "
                         f"continues along that segment past the last knot), got {out[-2]} then {out[-1]}")
    return Knots(out)


class Knots(tuple):
    """A checked ``comm_curve``: its knots, a plain tuple to compare, hash and print, carrying the
    (tokens, seconds, slopes) that ``Setup.comm_seconds`` reads at every step, worked out once
    (``lines``; not a Setup field, so ``Setup(**vars(setup))`` still builds the same Setup)."""

    def __new__(cls, knots):
        self = super().__new__(cls, knots)
        self.lines = curve_knots(tuple(self))
        return self


ROOFLINE_P = (0, 2, 4, 8)      # Setup.roofline_p's values: 0 the hard max, else a p-norm by squarings


def smooth_max(a, b, p, sqrt):
    """(a**p + b**p) ** (1/p) for p = 2, 4 or 8, by squarings and square roots: exactly rounded
    operations, so a scalar, a numpy array and the compiled loops (``sim._compiled``, written out
    there) give the same bits."""
    a, b = a * a, b * b
    if p == 2:
        return sqrt(a + b)
    a, b = a * a, b * b
    if p == 4:
        return sqrt(sqrt(a + b))
    a, b = a * a, b * b
    return sqrt(sqrt(sqrt(a + b)))


FEATURES = ("kv", "prefix_cache", "speculative")      # policy objects, off (None) by default


def _check_features(setup: Setup) -> None:
    from sim.kv import PrefixCache, as_kv_policy
    from sim.speculative import Speculative
    object.__setattr__(setup, "kv", as_kv_policy(setup.kv))
    if setup.prefix_cache is not None:
        if not isinstance(setup.prefix_cache, PrefixCache):
            raise ValueError(f"Setup.prefix_cache must be None or a sim.kv.PrefixCache, got {setup.prefix_cache!r}")
        if setup.kv is None:
            raise ValueError("Setup.prefix_cache needs Setup.kv='paged' (the cache lives in free KV blocks)")
        if getattr(setup.kv, "policy", "fcfs") == "priority":
            # not yet equal to vLLM V1 (tests/test_engine_vs_vllm.py keeps a counterexample)
            raise ValueError("Setup.prefix_cache with Paged(policy='priority') is not modelled; "
                             "use policy='fcfs' or drop the prefix cache")
    if setup.speculative is not None:
        if not isinstance(setup.speculative, Speculative):
            raise ValueError(f"Setup.speculative must be None or a sim.speculative.Speculative, got {setup.speculative!r}")
        if setup.kv is not None:
            _check_speculative_paged(setup)
    if setup.kv is not None and setup.kv_capacity_tokens < setup.kv.block_size:
        raise ValueError(f"Setup.kv_capacity_tokens must hold at least one block "
                         f"(>= block_size = {setup.kv.block_size}), got {setup.kv_capacity_tokens!r}")


def _check_speculative_paged(setup: Setup) -> None:
    """Speculative decoding with paged KV is vLLM V1's (lookahead slots, drafts for decoders only,
    the padding of a 1-token prompt), for the cases the engine models exactly."""
    kv = setup.kv
    if kv.preemption != "recompute":
        raise ValueError("Setup.speculative with paged KV needs Paged.preemption='recompute' (vLLM V1's; "
                         "swap is V0's)")
    if setup.prefix_cache is not None:
        raise ValueError("Setup.speculative with Setup.prefix_cache is not modelled; drop one of them")


def attention_pairs(done: int, chunk: int) -> int:
    """(query, key) pairs of causal attention when a prompt with ``done`` tokens already computed
    computes its next ``chunk``: each new token attends to every earlier token and to itself."""
    return chunk * done + chunk * (chunk + 1) // 2


def _positive(setup: Setup, *names: str) -> None:
    for name in names:
        if not getattr(setup, name) > 0:
            raise ValueError(f"Setup.{name} must be > 0, got {getattr(setup, name)!r}")


def _at_least(setup: Setup, low: float, *names: str) -> None:
    for name in names:
        if not getattr(setup, name) >= low:
            raise ValueError(f"Setup.{name} must be >= {low}, got {getattr(setup, name)!r}")


def _whole_at_least(setup: Setup, low: int, *names: str) -> None:
    for name in names:
        value = getattr(setup, name)
        if value != int(value):
            raise ValueError(f"Setup.{name} must be a whole number >= {low}, got {value!r}")
        if value < low:
            raise ValueError(f"Setup.{name} must be >= {low}, got {value!r}")
