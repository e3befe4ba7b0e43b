"""Hidden cases for 129: boundaries of the step rule, invalid inputs, and whole random workloads
driven one step at a time by your ``schedule_step``, compared request by request with the
reference driver and with the course simulator's engine (``sim.engine.run_requests``)."""
import random

import pytest

import reference
import submission
from judgekit import Mismatch, call, check_close, expect_value_error

CFG = {"max_num_batched_tokens": 8, "max_num_seqs": 3, "kv_capacity_tokens": 40}


def R(i, inp, out, done=0, gen=0):
    return {"id": i, "input_len": inp, "output_len": out, "prompt_done": done, "generated": gen}


def W(i, inp, out):
    return {"id": i, "input_len": inp, "output_len": out}


def both(*args):
    expected = reference.schedule_step(*args)
    got = call(submission, "schedule_step")(*args)
    return got, expected


def test_budget_exactly_used_by_prefill_stops_admission():
    check_close(*both([R(0, 10, 2, 2)], [W(1, 3, 1)], 12, CFG))


def test_budget_one_left_admits_with_one_token():
    check_close(*both([R(0, 10, 2, 3)], [W(1, 3, 1), W(2, 1, 1)], 12, CFG))


def test_decodes_take_a_token_past_the_budget():
    cfg = dict(CFG, max_num_batched_tokens=2, max_num_seqs=8)
    check_close(*both([R(0, 2, 5, 2, 1), R(1, 2, 5, 2, 1), R(2, 2, 5, 2, 1), R(3, 6, 2, 1)], [W(4, 1, 1)], 20, cfg))


def test_prefill_after_exhausted_budget_stops_the_pass():
    cfg = dict(CFG, max_num_batched_tokens=3, max_num_seqs=8)
    check_close(*both([R(0, 4, 3, 1), R(1, 4, 3, 0)], [W(2, 2, 2)], 14, cfg))


def test_kv_exact_fit_admits():
    check_close(*both([], [W(0, 5, 3), W(1, 30, 2)], 8, CFG))


def test_kv_one_over_blocks_the_queue():
    check_close(*both([], [W(0, 5, 3), W(1, 30, 3), W(2, 1, 1)], 2, CFG))


def test_max_num_seqs_reached_exactly():
    check_close(*both([R(0, 2, 3, 2, 1)], [W(1, 1, 1), W(2, 1, 1), W(3, 1, 1)], 0, CFG))


def test_admitted_prompt_longer_than_budget_is_chunked():
    check_close(*both([], [W(0, 20, 1)], 0, dict(CFG, kv_capacity_tokens=21)))


def test_finished_prompt_with_generated_tokens_is_decode():
    check_close(*both([R(0, 3, 4, 3, 3), R(1, 6, 1, 5)], [], 14, CFG))


def test_single_token_budget():
    cfg = {"max_num_batched_tokens": 1, "max_num_seqs": 1, "kv_capacity_tokens": 1 + 1}
    check_close(*both([], [W(0, 1, 1)], 0, cfg))


# --- whole workloads, one step at a time ------------------------------------------------------

def drive(fn, step_time, arrivals, inp, out, cfg):
    """Run the step rule with ``fn`` deciding each step; returns (first token, finish) times."""
    n = len(inp)
    state = [R(i, inp[i], out[i]) for i in range(n)]
    pending, waiting, running = list(range(n)), [], []
    kv_used, now, done = 0, 0.0, 0
    first, fin = [None] * n, [None] * n
    steps = 0
    while done < n:
        while pending and arrivals[pending[0]] <= now:
            waiting.append(pending.pop(0))
        if not waiting and not running:
            now = arrivals[pending[0]]
            continue
        steps += 1
        if steps > 20000:
            raise Mismatch("assert")
        plan = fn([dict(state[i]) for i in running], [W(i, inp[i], out[i]) for i in waiting], kv_used, cfg)
        try:
            admitted = list(plan["admitted"])
            if admitted != waiting[:len(admitted)]:
                raise Mismatch("assert")
            waiting = waiting[len(admitted):]
            running += admitted
            kv_used = plan["kv_used"]
            now += step_time(plan["tokens"], plan["context"], plan["pairs"])
            for rid, give in plan["work"]:
                r = state[rid]
                if r["prompt_done"] < r["input_len"]:
                    r["prompt_done"] += give
                    if r["prompt_done"] == r["input_len"]:
                        r["generated"] = 1
                        first[rid] = now
                else:
                    r["generated"] += 1
                if r["generated"] == r["output_len"]:
                    fin[rid] = now
                    running.remove(rid)
                    kv_used -= r["input_len"] + r["output_len"]
                    done += 1
        except (KeyError, TypeError, ValueError, IndexError):
            raise Mismatch("assert") from None
    return {"first_token": first, "finish": fin}


def _setup(cfg):
    from sim import Setup
    return Setup(params=1e9, weight_bytes=2e9, kv_bytes_per_token=2e5, kv_capacity_tokens=cfg["kv_capacity_tokens"],
                 max_num_batched_tokens=cfg["max_num_batched_tokens"], max_num_seqs=cfg["max_num_seqs"],
                 attn_flops_per_pair=4e6, step_overhead=1e-4)


def _step_time_without_sim(tokens, context, pairs):
    # sim.Setup.step_time for the setup above, written out (used only if sim is not installed)
    compute = 2 * 1e9 * tokens / (989e12 * 0.5) + 4e6 * pairs / (989e12 * 0.5)
    memory = (2e9 + 2e5 * context) / 3.35e12
    return max(compute, memory) + 1e-4


def _workload(seed):
    rng = random.Random(seed)
    n = rng.randint(3, 14)
    t, arrivals = 0.0, []
    for _ in range(n):
        t += rng.choice([0.0, rng.expovariate(400.0)])
        arrivals.append(t)
    inp = [rng.choice([1, rng.randint(1, 12), rng.randint(8, 60)]) for _ in range(n)]
    out = [rng.choice([1, 2, rng.randint(1, 12)]) for _ in range(n)]
    cfg = {"max_num_batched_tokens": rng.choice([4, 8, 16, 64]), "max_num_seqs": rng.choice([1, 2, 4, 16]),
           "kv_capacity_tokens": max(i + o for i, o in zip(inp, out)) + rng.choice([0, 5, 40, 400])}
    return arrivals, inp, out, cfg


WORKLOADS = [_workload(129_000 + i) for i in range(12)]


@pytest.mark.parametrize("index", range(len(WORKLOADS)), ids=[f"{i:02d}" for i in range(len(WORKLOADS))])
def test_random_workload_matches_sim(index):
    arrivals, inp, out, cfg = WORKLOADS[index]
    try:
        setup = _setup(cfg)
        step_time = setup.step_time
    except ImportError:
        setup, step_time = None, _step_time_without_sim
    expected = drive(reference.schedule_step, step_time, arrivals, inp, out, cfg)
    if setup is not None:   # the reference driver is the simulator's engine, request by request
        from sim.engine import run_requests
        result = run_requests(setup, arrivals, inp, out)
        sim_times = {"first_token": result.first_token.tolist(), "finish": result.finish.tolist()}
        try:
            check_close(expected, sim_times, rtol=1e-12)
        except Mismatch as exc:
            raise RuntimeError(f"reference driver differs from sim.engine: {exc}") from None
    got = drive(call(submission, "schedule_step"), step_time, arrivals, inp, out, cfg)
    check_close(got, expected, rtol=1e-12)


BAD = [
    ("config", ([], [], 0, {"max_num_batched_tokens": 8, "max_num_seqs": 2})),
    ("config", ([], [], 0, dict(CFG, max_num_seqs=0))),
    ("config", ([], [], 0, dict(CFG, kv_capacity_tokens=40.0))),
    ("kv_used", ([], [], -1, CFG)),
    ("kv_used", ([], [], 1.5, CFG)),
    ("running", ([R(0, 0, 1)], [], 0, CFG)),
    ("running", ([R(0, 3, 0)], [], 0, CFG)),
    ("running", ([R(0, 3, 1, -1)], [], 0, CFG)),
    ("running", ([R(0, 3, 1, 4)], [], 0, CFG)),
    ("running", ([R(0, 3, 2, 3, -1)], [], 0, CFG)),
    ("waiting", ([], [W(0, 0, 1)], 0, CFG)),
    ("waiting", ([], [W(0, 2, 0)], 0, CFG)),
]


@pytest.mark.parametrize("field,args", BAD, ids=[f"{f}_{i}" for i, (f, _) in enumerate(BAD)])
def test_invalid(field, args):
    expect_value_error(call(submission, "schedule_step"), *args, field=field)
