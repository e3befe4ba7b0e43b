"""What limits an instance at a given load: read off a run's step log.

Five candidates, checked in this order:

``ttft``             the TTFT SLO, for prompts so long that one alone takes a large part of it
                     (``TTFT_ALONE_SHARE``): the p99 TTFT sits at the SLO (``SLO_LEVEL``) while the
                     TPOT SLO has room, so the rate stops far below the instance's throughput. A
                     faster prefill (more FLOP/s, more GPUs) or a looser TTFT SLO would raise it;
``kv_capacity``      the KV reserved by running requests sits at the cache's size;
``max_num_seqs``     the number of running requests sits at the scheduler's limit;
``prefill_compute``  the steps' FLOP term is the larger roofline term (long prompt chunks, big
                     batches): more FLOP/s or a higher MFU would raise the rate;
``decode_bandwidth`` reading the weights and the KV cache is the larger term: more memory
                     bandwidth (or smaller weights / KV) would raise the rate.

A capacity limit binds when the instance spends at least ``LIMIT_SHARE`` of its busy time at
``LIMIT_LEVEL`` or more of that limit (time-weighted over steps); the larger such share wins.
Otherwise the roofline term that covers more of the busy time wins. The step log records decoders,
not prefilling requests, so the counts below cover requests past their first token; with a chunked
prefill only a few prompts are in flight at once, so this undercounts by at most a handful.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from sim.result import SimResult
from sim.setup import Setup, curve_min_per_token

BOUNDS = ("ttft", "prefill_compute", "decode_bandwidth", "kv_capacity", "max_num_seqs")
LIMIT_LEVEL = 0.95     # "at the limit": this fraction of it or more
LIMIT_SHARE = 0.10     # a limit binds when the instance is at it this share of its busy time
SLO_LEVEL = 0.8        # an SLO binds when the run's p99 reaches this fraction of it
TTFT_ALONE_SHARE = 0.25   # "long prompts": one request alone takes this share of the TTFT SLO


def shares(setup: Setup, result: SimResult, *, ttft_slo: float | None = None,
           tpot_slo: float | None = None, ttft_alone: float | None = None) -> dict:
    """Time-weighted shares of the busy time: compute- vs memory-bound steps, and time at each limit.

    Keys: ``compute`` and ``memory`` (they sum to 1), ``kv_at_limit``, ``seqs_at_limit``, plus the
    peaks ``kv_peak`` (reserved KV / kv_capacity_tokens) and ``seqs_peak`` (running / max_num_seqs).
    Given the SLOs, also ``ttft_level`` and ``tpot_level`` (the run's p99 over each SLO) and, given
    the TTFT of a lone request, ``ttft_alone`` (that TTFT over the SLO).
    """
    out = _step_shares(setup, result)
    if ttft_slo and tpot_slo and len(result):
        out["ttft_level"] = float(np.percentile(result.ttft, 99)) / ttft_slo
        out["tpot_level"] = float(np.percentile(result.tpot, 99)) / tpot_slo
        if ttft_alone is not None:
            out["ttft_alone"] = ttft_alone / ttft_slo
    return out


def _step_shares(setup: Setup, result: SimResult) -> dict:
    steps = result.steps
    duration = steps.duration
    busy = float(duration.sum())
    if busy <= 0 or len(steps) == 0:
        return {"compute": 0.0, "memory": 1.0, "kv_at_limit": 0.0, "seqs_at_limit": 0.0,
                "kv_peak": 0.0, "seqs_peak": 0.0}
    compute, memory, serial = setup.roofline_terms(steps.tokens, steps.context, steps.pairs)
    compute_share = float(duration[compute >= memory + serial].sum()) / busy   # FLOPs vs all memory traffic

    # Requests past their first token at each step's start, and the KV they reserve.
    reserve = (result.input_len + result.output_len).astype(float)
    seqs = _live(steps.start, result.first_token, result.finish, np.ones(len(result)))
    kv = _live(steps.start, result.first_token, result.finish, reserve)
    kv_level = kv / setup.kv_capacity_tokens
    seq_level = seqs / setup.max_num_seqs
    return {
        "compute": compute_share,
        "memory": 1.0 - compute_share,
        "kv_at_limit": float(duration[kv_level >= LIMIT_LEVEL].sum()) / busy,
        "seqs_at_limit": float(duration[seq_level >= LIMIT_LEVEL].sum()) / busy,
        "kv_peak": float(kv_level.max()),
        "seqs_peak": float(seq_level.max()),
    }


def classify(share: dict) -> str:
    """One of ``BOUNDS`` from ``shares(...)``: the TTFT SLO for long prompts, else a capacity limit
    if one binds, else the roofline term."""
    if (share.get("ttft_alone", 0) >= TTFT_ALONE_SHARE and share.get("ttft_level", 0) >= SLO_LEVEL
            and share.get("tpot_level", 1) < SLO_LEVEL):
        return "ttft"
    limits = [(share["kv_at_limit"], "kv_capacity"), (share["seqs_at_limit"], "max_num_seqs")]
    top_share, top = max(limits)
    if top_share >= LIMIT_SHARE:
        return top
    return "prefill_compute" if share["compute"] >= share["memory"] else "decode_bandwidth"


class Ceilings(NamedTuple):
    """Analytic ceilings on one instance's rate (req/s), from the roofline alone (no queueing):

    compute    every token (prompt or output) costs 2 x params FLOPs at ``mfu`` of the peak, plus
               ``comm_s_per_token`` (and ``comm_curve``'s least seconds per token over the budget):
               peak_flops x mfu / (2 x params x (input_len + output_len))
    bandwidth  decode steps at the largest batch whose reservations fit (at most max_num_seqs), each
               reading the weights and the batch's KV at input_len + output_len / 2 tokens, plus the
               step overhead and its communication: batch / (output_len x step time)
    kv         the requests whose whole reservation fits in the KV cache at once, each held for a
               lone request's lifetime at the floors (prefill at full compute, then output_len
               decode steps that read the weights): kv requests / lifetime

    ``min(compute, bandwidth)`` is ``sim.capacity.throughput_bound``, where the rate search starts.
    """

    compute: float
    bandwidth: float
    kv: float


def ceilings(setup: Setup, input_len: int, output_len: int) -> Ceilings:
    """The three ``Ceilings`` for requests of ``input_len`` prompt and ``output_len`` output tokens."""
    tokens = input_len + output_len
    compute = setup.peak_flops * setup.mfu / (2 * setup.params * tokens)
    kv_requests = setup.kv_capacity_tokens // tokens
    batch = min(setup.max_num_seqs, kv_requests)
    decode_step = (setup.weight_bytes + setup.kv_bytes_per_token * batch * (input_len + output_len / 2)) / setup.bandwidth
    bandwidth = batch / (output_len * (decode_step + setup.step_overhead))
    if setup.comm_s_per_token:          # communication adds to every token's time
        compute = 1 / (1 / compute + setup.comm_s_per_token * tokens)
        bandwidth = batch / (output_len * (decode_step + setup.step_overhead + setup.comm_s_per_token * batch))
    comm_token = setup.comm_s_per_token
    if setup.comm_curve is not None:    # a step of t tokens adds comm_seconds(t): at least t x its least per token
        least = curve_min_per_token(setup, 1, setup.max_num_batched_tokens)
        comm_token = comm_token + least
        compute = 1 / (1 / compute + least * tokens)
        bandwidth = batch / (output_len * (decode_step + setup.step_overhead + setup.comm_s_per_token * batch
                                           + setup.comm_seconds(batch)))
    flops = setup.peak_flops * setup.mfu
    ttft_floor = (2 * setup.params * input_len / flops + math.ceil(input_len / setup.max_num_batched_tokens)
                  * setup.step_overhead + comm_token * input_len)
    tpot_floor = (setup.weight_bytes / setup.bandwidth + setup.step_overhead + setup.comm_s_per_token
                  + setup.comm_seconds(1))
    kv = max(1, kv_requests) / (ttft_floor + output_len * tpot_floor)
    return Ceilings(compute, bandwidth, kv)


def _live(at: np.ndarray, begin: np.ndarray, end: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Sum of ``weight`` over intervals with ``begin <= t < end``, for each time ``t`` in ``at``."""
    order_b, order_e = np.argsort(begin, kind="stable"), np.argsort(end, kind="stable")
    cum_b = np.concatenate(([0.0], np.cumsum(weight[order_b])))
    cum_e = np.concatenate(([0.0], np.cumsum(weight[order_e])))
    started = cum_b[np.searchsorted(begin[order_b], at, side="right")]
    ended = cum_e[np.searchsorted(end[order_e], at, side="right")]
    return started - ended
