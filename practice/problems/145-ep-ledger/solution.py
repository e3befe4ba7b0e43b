"""Reference solution for 145: the ledger of expert-parallel communication per decode step, under
uniform top-k routing: copies per token over NVLink and RDMA, bytes per GPU, and the link times."""
import math
import numbers


def _int(name, x, minimum):
    if isinstance(x, bool) or not isinstance(x, numbers.Integral) or x < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {x!r}")


def _pos(name, x):
    if isinstance(x, bool) or not isinstance(x, numbers.Real) or not math.isfinite(x) or x <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {x!r}")


def _routing(num_experts, topk, groups, groups_name):
    _int("num_experts", num_experts, 1)
    _int("topk", topk, 1)
    if topk > num_experts:
        raise ValueError(f"topk must be at most the number of experts ({num_experts}), got {topk}")
    _int(groups_name, groups, 1)
    if num_experts % groups:
        raise ValueError(f"{groups_name} must divide the number of experts ({num_experts}), got {groups}")


def _hit(num_experts, topk, groups):
    return 1 - math.comb(num_experts - num_experts // groups, topk) / math.comb(num_experts, topk)


def group_hit_prob(num_experts, topk, groups):
    """Probability that one given group of num_experts / groups experts holds at least one of a
    token's topk distinct, uniformly chosen experts."""
    _routing(num_experts, topk, groups, "groups")
    return _hit(num_experts, topk, groups)


def ep_ledger(tokens_per_gpu, num_experts, topk, gpus, gpus_per_node, hidden, moe_layers,
              dispatch_bytes, combine_bytes, nvlink_gbs, rdma_gbs):
    """Per decode step and GPU: each token goes once to every other GPU holding one of its experts
    (NVLink inside the node, RDMA across nodes) and comes back from each of them."""
    _int("tokens_per_gpu", tokens_per_gpu, 1)
    _routing(num_experts, topk, gpus, "gpus")
    _int("gpus_per_node", gpus_per_node, 1)
    if gpus % gpus_per_node:
        raise ValueError(f"gpus_per_node must divide the GPU count ({gpus}), got {gpus_per_node}")
    _int("hidden", hidden, 1)
    _int("moe_layers", moe_layers, 1)
    for name, x in (("dispatch_bytes", dispatch_bytes), ("combine_bytes", combine_bytes),
                    ("nvlink_gbs", nvlink_gbs), ("rdma_gbs", rdma_gbs)):
        _pos(name, x)
    p = _hit(num_experts, topk, gpus)
    nvlink_copies = (gpus_per_node - 1) * p
    rdma_copies = (gpus - gpus_per_node) * p
    per_copy = tokens_per_gpu * moe_layers * hidden * (dispatch_bytes + combine_bytes)
    nvlink_bytes = nvlink_copies * per_copy
    rdma_bytes = rdma_copies * per_copy
    return {"nvlink_copies": nvlink_copies, "rdma_copies": rdma_copies,
            "nvlink_bytes": nvlink_bytes, "rdma_bytes": rdma_bytes,
            "nvlink_s": nvlink_bytes / (nvlink_gbs * 1e9), "rdma_s": rdma_bytes / (rdma_gbs * 1e9)}
