"""Reference solution for 168: weight sync between RL training and rollout."""
import math
import numbers


def _number(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")


def _positive(name, value):
    _number(name, value)
    if not value > 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")


def _non_negative(name, value):
    _number(name, value)
    if not value >= 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")


def _integer(name, value, low):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")


def sync_s(weight_bytes, instances, *, mode, sender_gbs, receiver_gbs, latency_s=0.0):
    """Seconds until every rollout instance holds the new weights."""
    _positive("weight_bytes", weight_bytes)
    _integer("instances", instances, 1)
    if mode not in ("push", "relay"):
        raise ValueError(f"mode must be 'push' or 'relay', got {mode!r}")
    _positive("sender_gbs", sender_gbs)
    _positive("receiver_gbs", receiver_gbs)
    _non_negative("latency_s", latency_s)
    receive = weight_bytes / (receiver_gbs * 1e9)
    if mode == "push":
        return max(instances * weight_bytes / (sender_gbs * 1e9), receive) + latency_s
    return max(weight_bytes / (sender_gbs * 1e9), receive) + instances * latency_s


def rl_step(rollout_s, train_s, sync_s, *, mode):
    """One RL step, synchronous or one step off-policy, and how busy each side is."""
    _positive("rollout_s", rollout_s)
    _positive("train_s", train_s)
    _non_negative("sync_s", sync_s)
    if mode == "sync":
        step = rollout_s + train_s + sync_s
    elif mode == "async":
        step = max(rollout_s, train_s) + sync_s
    else:
        raise ValueError(f"mode must be 'sync' or 'async', got {mode!r}")
    return {"step_s": float(step), "rollout_busy": rollout_s / step, "train_busy": train_s / step}


def rollout_gpus(prompts, samples_per_prompt, output_len, *, tokens_per_s_per_gpu, rollout_s):
    """GPUs that generate one step's samples within rollout_s."""
    _integer("prompts", prompts, 1)
    _integer("samples_per_prompt", samples_per_prompt, 1)
    _integer("output_len", output_len, 1)
    _positive("tokens_per_s_per_gpu", tokens_per_s_per_gpu)
    _positive("rollout_s", rollout_s)
    tokens = prompts * samples_per_prompt * output_len
    return {"tokens": tokens, "gpus": math.ceil(tokens / (tokens_per_s_per_gpu * rollout_s))}
