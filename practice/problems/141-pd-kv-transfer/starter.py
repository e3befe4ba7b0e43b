"""141. 估算：PD 分离的 KV 传输。

Write the three functions below; see problem.md for the rules, units and the worked example.
Judge with:  python practice/judge.py 141
"""


def transfer_s(input_len, kv_bytes_per_token, *, link_gbs=50.0, latency_s=1e-3):
    """input_len * kv_bytes_per_token / (link_gbs * 1e9) + latency_s."""
    raise NotImplementedError


def exposed_s(input_len, kv_bytes_per_token, prefill_s, layers, *, link_gbs=50.0, latency_s=1e-3):
    """Seconds left after the prefill when every layer's KV is sent as soon as it is computed."""
    raise NotImplementedError


def link_load(qps, input_len, kv_bytes_per_token, *, decode_instances, nics_per_instance, nic_gbs=50.0):
    """Return {"gbs_needed", "per_instance_gbs", "utilization"}."""
    raise NotImplementedError
