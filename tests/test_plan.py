"""sim.plan: from a QPS target to instances, GPUs and cost; and the bound it reports."""

import json
import math

import pytest

from sim import Setup
from sim import BracketError, InfeasibleError, Plan, max_rate, meets_slo, plan

KV = 2 * 80 * 8 * 128
CHAPTER = Setup(params=70.6e9, weight_bytes=70.6e9, kv_bytes_per_token=KV,
                kv_capacity_tokens=int((8 * 80e9 * 0.9 - 70.6e9) / KV), peak_flops=8 * 1979e12,
                bandwidth=8 * 3.35e12, mfu=0.4, step_overhead=1.5e-3, max_num_batched_tokens=8192,
                max_num_seqs=512)
ARGS = (2000, 500, 2.0, 0.05)


@pytest.fixture(scope="module")
def chapter_plan() -> Plan:
    """The handbook's figures: the default search on the handbook's 1500-request trials."""
    return plan(200, CHAPTER, *ARGS, gpus_per_instance=8, num_requests=1500)


def test_chapter_figures_default_search(chapter_plan):
    p = chapter_plan
    assert p.search == "auto"
    assert f"{p.rate_per_instance:.1f}" == "16.8"
    assert (p.instances_no_headroom, p.instances, p.gpus) == (12, 16, 128)
    assert f"{p.usd_per_hour:.0f}" == "320" and f"{p.usd_per_million_output_tokens:.2f}" == "0.89"
    assert f"{p.low_load_ttft_s * 1e3:.0f}" == "48" and f"{p.low_load_tpot_s * 1e3:.1f}" == "4.3"


def test_chapter_search_is_the_handbook_bisection():
    p = plan(200, CHAPTER, *ARGS, gpus_per_instance=8, search="chapter")
    assert p.search == "chapter"
    assert p.rate_per_instance == max_rate(CHAPTER, (2000, 500), 2.0, 0.05, method="bisect") == 16.75830078125
    assert (p.instances, p.gpus) == (16, 128)


def test_auto_rate_is_feasible_and_close_to_the_boundary(chapter_plan):
    r = chapter_plan.rate_per_instance
    assert meets_slo(CHAPTER, (2000, 500), r, 2.0, 0.05, num_requests=1500)
    assert not meets_slo(CHAPTER, (2000, 500), r * 1.002, 2.0, 0.05, num_requests=1500)


def test_default_plan_uses_steady_state_trials():
    """Without num_requests the trials are sim.capacity's steady-state ones: the chapter's instance
    holds 16.1 req/s over a long run (16.8 was its first 1500 requests), so 13 / 17 instances."""
    p = plan(200, CHAPTER, *ARGS, gpus_per_instance=8)
    assert f"{p.rate_per_instance:.1f}" == "16.1" and (p.instances_no_headroom, p.instances) == (13, 17)
    assert meets_slo(CHAPTER, (2000, 500), p.rate_per_instance, 2.0, 0.05)
    assert not meets_slo(CHAPTER, (2000, 500), p.rate_per_instance * 1.002, 2.0, 0.05)


def test_derived_figures_follow_their_formulas(chapter_plan):
    p = chapter_plan
    assert p.instances_no_headroom == math.ceil(p.qps / p.rate_per_instance)
    assert p.instances == math.ceil(p.qps / p.rate_per_instance * p.headroom)
    assert p.gpus == p.instances * p.gpus_per_instance
    assert p.usd_per_hour == p.gpus * p.gpu_hour_usd
    assert p.usd_per_million_output_tokens == pytest.approx(
        p.usd_per_hour / (p.qps * p.output_len * 3600) * 1e6)


def test_given_rate_skips_the_search():
    p = plan(100, CHAPTER, *ARGS, gpus_per_instance=8, rate=10.0, headroom=1.0, gpu_hour_usd=3.0)
    assert p.search == "given" and p.rate_per_instance == 10.0
    assert (p.instances, p.gpus, p.usd_per_hour) == (10, 80, 240.0)


def test_more_qps_never_needs_fewer_gpus():
    gpus = [plan(q, CHAPTER, *ARGS, gpus_per_instance=8, rate=16.76).gpus for q in (1, 10, 50, 99.9, 100, 100.1, 400)]
    assert gpus == sorted(gpus)


def test_as_dict_is_json_and_str_is_a_table(chapter_plan):
    d = chapter_plan.as_dict()
    assert json.loads(json.dumps(d))["gpus"] == 128
    assert set(d["bound_shares"]) >= {"compute", "memory", "kv_at_limit", "seqs_at_limit"}
    text = str(chapter_plan)
    for figure in ("16.8 req/s", "12, 16 with 1.3x", "128", "$320/h", "$0.89", "48 ms", "4.3 ms"):
        assert figure in text


def test_chapter_instance_is_compute_bound(chapter_plan):
    # The chapter: "瓶颈在高负载时 prefill 与 decode 争抢算力".
    assert chapter_plan.bound == "prefill_compute"
    assert chapter_plan.bound_shares["compute"] > 0.5


@pytest.mark.parametrize("changes, lengths, expected", [
    ({"kv_capacity_tokens": 60_000}, (2000, 500, 2.0, 0.05), "kv_capacity"),
    ({"max_num_seqs": 16}, (2000, 500, 2.0, 0.05), "max_num_seqs"),
    ({"bandwidth": 1e12, "max_num_seqs": 4096}, (100, 500, 5.0, 0.1), "decode_bandwidth"),
])
def test_bound_names_the_limit(changes, lengths, expected):
    p = plan(50, CHAPTER.replace(**changes), *lengths, gpus_per_instance=8)
    assert p.bound == expected


def test_infeasible_raises_with_the_reason():
    with pytest.raises(InfeasibleError, match="TTFT is .* > ttft_slo") as info:
        plan(200, CHAPTER, 2000, 500, 0.01, 0.05, gpus_per_instance=8)
    assert isinstance(info.value, ValueError) and info.value.ttft_s > 0.01


def test_chapter_search_outside_its_bracket_raises():
    fast = CHAPTER.replace(peak_flops=CHAPTER.peak_flops * 10, bandwidth=CHAPTER.bandwidth * 10)
    with pytest.raises(BracketError):
        plan(200, fast, *ARGS, gpus_per_instance=8, search="chapter")


def test_search_stops_when_slos_never_bind():
    tiny = Setup(params=1e6, weight_bytes=1e6, kv_bytes_per_token=1, kv_capacity_tokens=10**6,
                 peak_flops=1e18, bandwidth=1e15, step_overhead=0)
    with pytest.raises(BracketError, match="do not constrain"):
        max_rate(tiny, (16, 4), 1e9, 1e9, num_requests=50)


@pytest.mark.parametrize("kwargs, field", [
    ({"qps": 0}, "qps"), ({"qps": math.inf}, "qps"), ({"ttft_slo": -1}, "ttft_slo"),
    ({"tpot_slo": 0}, "tpot_slo"), ({"gpus_per_instance": 0}, "gpus_per_instance"),
    ({"headroom": 0.9}, "headroom"), ({"gpu_hour_usd": -1}, "gpu_hour_usd"),
    ({"search": "fast"}, "search"), ({"rate": 0.0}, "rate"), ({"input_len": 0}, "input_len"),
    ({"output_len": 3_100_000}, "kv_capacity_tokens"),
])
def test_bad_input_names_the_field(kwargs, field):
    args = dict(qps=200, setup=CHAPTER, input_len=2000, output_len=500, ttft_slo=2.0, tpot_slo=0.05,
                gpus_per_instance=8)
    args.update(kwargs)
    with pytest.raises(ValueError, match=field):
        plan(**args)


def test_plan_ranges_come_from_the_validation_residuals():
    from sim import presets
    setup = presets.instance("llama-3-70b", "h100-sxm", tp=8, weight_dtype="fp8", kv_dtype="fp8")
    u = presets.uncertainty("h100-sxm", 8)
    p = plan(200, setup, 2000, 500, 2.0, 0.05, gpus_per_instance=8, uncertainty=u)
    r = p.rate_per_instance
    assert p.rate_range == pytest.approx((r * u.low, r * u.high))
    fewest, most = p.instances_range
    assert fewest == math.ceil(200 / (r * u.high) * 1.3) and most == math.ceil(200 / (r * u.low) * 1.3)
    assert p.gpus_range == (8 * fewest, 8 * most) and u.low < 1 < u.high and fewest <= p.instances <= most
    text = str(p)
    assert f"{p.gpus} ({8 * fewest}-{8 * most})" in text and u.slice in text
    assert p.as_dict()["gpus_range"] == [8 * fewest, 8 * most]
    plain = plan(200, setup, 2000, 500, 2.0, 0.05, gpus_per_instance=8)
    assert plain.gpus == p.gpus and plain.gpus_range is None and "ranges" not in str(plain)


def test_residual_slices_fall_back_to_wider_ones():
    from sim import presets
    from sim.presets.residuals import RANGES
    u = presets.uncertainty("h100-sxm", 8)
    assert u.slice == "h100-sxm/tp8" and RANGES["h100-sxm/tp8"][2] >= presets.MIN_RESIDUAL_ROWS
    assert presets.uncertainty("gh200", 2).slice in ("gh200", "all")
    assert presets.uncertainty("gh200", 2).rows >= presets.MIN_RESIDUAL_ROWS


def test_long_prompts_are_bound_by_the_ttft_slo():
    from sim import presets
    setup = presets.instance("llama-3-8b", "h100-sxm", weight_dtype="fp8")
    p = plan(5, setup, 32000, 100, 2.0, 0.2, gpus_per_instance=1)
    assert p.bound == "ttft" and p.bound_shares["ttft_alone"] >= 0.25
    assert p.bound_shares["ttft_level"] >= 0.8 > p.bound_shares["tpot_level"]


def test_a_lone_request_that_misses_answers_without_a_search(monkeypatch):
    from sim import planning
    calls = []
    monkeypatch.setattr(planning, "capacity_search", lambda *a, **k: calls.append(a))
    with pytest.raises(InfeasibleError, match="TPOT is .* > tpot_slo") as info:
        plan(200, CHAPTER, 2000, 500, 2.0, 0.001, gpus_per_instance=8)
    assert calls == [] and info.value.tpot_s > 0.001
    with pytest.raises(InfeasibleError):
        plan(200, CHAPTER, 2000, 500, 0.01, 0.05, gpus_per_instance=8, search="chapter")


def test_resized_is_the_plan_for_another_qps_or_price(chapter_plan):
    again = plan(750, CHAPTER, *ARGS, gpus_per_instance=8, gpu_hour_usd=4.0, num_requests=1500)
    assert chapter_plan.resized(qps=750, gpu_hour_usd=4.0) == again
    assert chapter_plan.resized() == chapter_plan
    with pytest.raises(ValueError, match="qps"):
        chapter_plan.resized(qps=0)


def test_resized_keeps_the_ranges_in_step():
    from sim import presets
    setup = presets.instance("llama-3-8b", "h100-sxm", weight_dtype="fp8")
    u = presets.uncertainty("h100-sxm", 1)
    p = plan(20, setup, 1000, 200, 1.0, 0.05, gpus_per_instance=1, uncertainty=u)
    assert p.resized(qps=300) == plan(300, setup, 1000, 200, 1.0, 0.05, gpus_per_instance=1, uncertainty=u)


def test_plan_carries_the_ceilings_and_the_run_it_read_the_bound_from(chapter_plan):
    from sim import bound, capacity
    c = chapter_plan.ceilings
    assert c == bound.ceilings(CHAPTER, 2000, 500)
    assert f"{c.compute:.1f}" == "17.9"             # the chapter's compute ceiling
    assert min(c.compute, c.bandwidth) == capacity.throughput_bound(CHAPTER, 2000, 500)
    assert chapter_plan.as_dict()["ceilings"] == c._asdict() and "run_at_rate" not in chapter_plan.as_dict()
    run = chapter_plan.run_at_rate
    assert len(run) == 1500 and run.arrival[-1] == pytest.approx(1500 / chapter_plan.rate_per_instance, rel=0.1)


@pytest.mark.parametrize("setup", [
    CHAPTER.replace(comm_s_per_token=2e-7),
    CHAPTER.replace(kv_capacity_tokens=30_000, max_num_seqs=8),
])
def test_ceilings_min_is_the_searchs_starting_bound(setup):
    from sim import bound, capacity
    c = bound.ceilings(setup, 1000, 300)
    assert min(c.compute, c.bandwidth) == capacity.throughput_bound(setup, 1000, 300)
    assert c.kv > 0


def test_with_speculative_decoding_a_lone_requests_tpot_does_not_decide(monkeypatch):
    # Acceptance is drawn per request: the lone request's TPOT is one draw, so plan still searches.
    from types import SimpleNamespace

    from sim import planning, simulate
    from sim.speculative import Speculative
    spec = CHAPTER.replace(speculative=Speculative(k=4, alpha=0.7))
    lone = float(simulate(spec, 1.0, 1, 2000, 500).tpot[0])
    calls = []
    no_rate = (0.0, SimpleNamespace(results={}))
    monkeypatch.setattr(planning, "capacity_search", lambda *a, **k: (calls.append(a), no_rate)[1])
    with pytest.raises(InfeasibleError):
        plan(200, spec, 2000, 500, 2.0, lone * 0.999, gpus_per_instance=8)
    assert len(calls) == 1
