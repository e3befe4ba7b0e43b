"""137. 估算：专家并行的 all-to-all 与节点受限路由。

Write the three functions below; see problem.md for the model and the worked example.
Judge with:  python practice/judge.py 137
"""
import math


def nodes_distribution(experts, nodes, top_k):
    """[P(the top_k experts sit on exactly j nodes) for j in 0..nodes], experts drawn uniformly."""
    raise NotImplementedError


def nodes_reached(experts, nodes, top_k, max_nodes):
    """Sum over j of min(j, max_nodes) * P(D = j)."""
    raise NotImplementedError


def ep_step(tokens_per_gpu, *, hidden, moe_layers, experts, nodes, top_k, max_nodes, nic_gbs,
            dispatch_bytes=1.0, combine_bytes=2.0):
    """Return {"nodes_reached", "remote_nodes", "bytes_per_layer", "ms_per_step"}."""
    raise NotImplementedError
