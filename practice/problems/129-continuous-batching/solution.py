"""Reference solution for 129: one step of the course's continuous-batching step rule."""
import numbers


def _int(value, minimum):
    return not (isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum)


def schedule_step(running, waiting, kv_used, config):
    """Which requests compute how many tokens this step, and who is admitted (the step rule)."""
    keys = ("max_num_batched_tokens", "max_num_seqs", "kv_capacity_tokens")
    if not isinstance(config, dict) or set(config) != set(keys) or not all(_int(config[k], 1) for k in keys):
        raise ValueError(f"config must have {', '.join(keys)} as integers >= 1, got {config!r}")
    if not _int(kv_used, 0):
        raise ValueError(f"kv_used must be an integer >= 0, got {kv_used!r}")
    for name, requests in (("running", running), ("waiting", waiting)):
        if not isinstance(requests, list) or not all(isinstance(r, dict) and "id" in r for r in requests):
            raise ValueError(f"{name} must be a list of request dicts (each with an id), got {requests!r}")
    for r in running:
        if not (_int(r.get("input_len"), 1) and _int(r.get("output_len"), 1) and _int(r.get("prompt_done"), 0)
                and _int(r.get("generated"), 0) and r["prompt_done"] <= r["input_len"]):
            raise ValueError(f"running: bad request {r!r}")
    for r in waiting:
        if not (_int(r.get("input_len"), 1) and _int(r.get("output_len"), 1)):
            raise ValueError(f"waiting: bad request {r!r}")
    budget = config["max_num_batched_tokens"]
    work = []
    for r in running:
        give = min(r["input_len"] - r["prompt_done"], budget) if r["prompt_done"] < r["input_len"] else 1
        if give <= 0:
            break
        work.append([r["id"], give])
        budget -= give
    admitted = []
    count = len(running)
    for r in waiting:
        need = r["input_len"] + r["output_len"]
        if budget <= 0 or count >= config["max_num_seqs"] or kv_used + need > config["kv_capacity_tokens"]:
            break
        kv_used += need
        count += 1
        give = min(r["input_len"], budget)
        work.append([r["id"], give])
        admitted.append(r["id"])
        budget -= give
    context = sum(r["prompt_done"] + r["generated"] for r in running)
    started = {r["id"]: r["prompt_done"] for r in running if r["prompt_done"] < r["input_len"]}
    started.update({rid: 0 for rid in admitted})
    pairs = sum(give * started[rid] + give * (give + 1) // 2 for rid, give in work if rid in started)
    return {"work": work, "admitted": admitted, "tokens": sum(g for _, g in work),
            "context": context, "pairs": pairs, "kv_used": kv_used}
