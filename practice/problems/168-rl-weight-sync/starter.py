"""168. 估算：强化学习的权重同步。

Write the three functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 168
"""
import math


def sync_s(weight_bytes, instances, *, mode, sender_gbs, receiver_gbs, latency_s=0.0):
    """Seconds until every rollout instance has the new weights ("push" or "relay")."""
    raise NotImplementedError


def rl_step(rollout_s, train_s, sync_s, *, mode):
    """Return {"step_s", "rollout_busy", "train_busy"} for mode "sync" or "async"."""
    raise NotImplementedError


def rollout_gpus(prompts, samples_per_prompt, output_len, *, tokens_per_s_per_gpu, rollout_s):
    """Return {"tokens", "gpus"}."""
    raise NotImplementedError
