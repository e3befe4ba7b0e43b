"""Reference solution for 141: the KV transfer of PD disaggregation."""
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


def transfer_s(input_len, kv_bytes_per_token, *, link_gbs=50.0, latency_s=1e-3):
    """Seconds to move a prompt's KV after its prefill: bytes over the link plus the latency."""
    _integer("input_len", input_len, 1)
    _positive("kv_bytes_per_token", kv_bytes_per_token)
    _positive("link_gbs", link_gbs)
    _non_negative("latency_s", latency_s)
    return input_len * kv_bytes_per_token / (link_gbs * 1e9) + latency_s


def exposed_s(input_len, kv_bytes_per_token, prefill_s, layers, *, link_gbs=50.0, latency_s=1e-3):
    """Seconds the transfer adds after the prefill when each layer's KV is sent as soon as that
    layer is computed, one layer at a time over the link."""
    _positive("prefill_s", prefill_s)
    _integer("layers", layers, 1)
    whole = transfer_s(input_len, kv_bytes_per_token, link_gbs=link_gbs, latency_s=0.0)
    _non_negative("latency_s", latency_s)
    per_layer_send = whole / layers
    per_layer_compute = prefill_s / layers
    done = 0.0
    for i in range(1, layers + 1):
        done = max(done, i * per_layer_compute) + per_layer_send
    return max(0.0, done - prefill_s) + latency_s


def link_load(qps, input_len, kv_bytes_per_token, *, decode_instances, nics_per_instance, nic_gbs=50.0):
    """How hard the decode pool's NICs work to receive every prompt's KV."""
    _positive("qps", qps)
    _integer("input_len", input_len, 1)
    _positive("kv_bytes_per_token", kv_bytes_per_token)
    _integer("decode_instances", decode_instances, 1)
    _integer("nics_per_instance", nics_per_instance, 1)
    _positive("nic_gbs", nic_gbs)
    gbs_needed = qps * input_len * kv_bytes_per_token / 1e9
    per_instance = gbs_needed / decode_instances
    return {"gbs_needed": gbs_needed, "per_instance_gbs": per_instance,
            "utilization": per_instance / (nics_per_instance * nic_gbs)}
