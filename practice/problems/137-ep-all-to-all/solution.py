"""Reference solution for 137: EP all-to-all traffic with node-limited routing."""
import math
import numbers


def _number(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")


def _positive(name, value):
    _number(name, value)
    if not value > 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")


def _integer(name, value, low):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")


def nodes_distribution(experts, nodes, top_k):
    """P(a token's top_k experts, drawn uniformly without replacement, sit on exactly j nodes), j = 0..nodes."""
    _integer("experts", experts, 1)
    _integer("nodes", nodes, 1)
    _integer("top_k", top_k, 1)
    if experts % nodes:
        raise ValueError(f"nodes ({nodes}) must divide experts ({experts})")
    if top_k > experts:
        raise ValueError(f"top_k ({top_k}) must be <= experts ({experts})")
    per_node = experts // nodes
    total = math.comb(experts, top_k)
    probabilities = []
    for j in range(nodes + 1):
        # choices that use every one of j given nodes (inclusion-exclusion), times the ways to pick them
        onto = sum((-1) ** i * math.comb(j, i) * math.comb((j - i) * per_node, top_k) for i in range(j + 1))
        probabilities.append(math.comb(nodes, j) * onto / total)
    return probabilities


def nodes_reached(experts, nodes, top_k, max_nodes):
    """Expected distinct nodes per token when routing is limited to max_nodes nodes: E[min(D, M)]."""
    _integer("max_nodes", max_nodes, 1)
    probabilities = nodes_distribution(experts, nodes, top_k)
    return sum(min(j, max_nodes) * p for j, p in enumerate(probabilities))


def ep_step(tokens_per_gpu, *, hidden, moe_layers, experts, nodes, top_k, max_nodes, nic_gbs,
            dispatch_bytes=1.0, combine_bytes=2.0):
    """Inter-node all-to-all of one step: bytes each GPU's NIC carries per layer, and the time."""
    _integer("tokens_per_gpu", tokens_per_gpu, 1)
    _integer("hidden", hidden, 1)
    _integer("moe_layers", moe_layers, 1)
    _positive("nic_gbs", nic_gbs)
    _positive("dispatch_bytes", dispatch_bytes)
    _positive("combine_bytes", combine_bytes)
    reached = nodes_reached(experts, nodes, top_k, max_nodes)
    remote = reached * (nodes - 1) / nodes
    per_layer = tokens_per_gpu * remote * hidden * (dispatch_bytes + combine_bytes)
    return {"nodes_reached": reached, "remote_nodes": remote, "bytes_per_layer": per_layer,
            "ms_per_step": moe_layers * per_layer / (nic_gbs * 1e9) * 1e3}
