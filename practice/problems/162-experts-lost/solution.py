"""Reference solution for 162: which experts an EP deployment loses when GPUs fail, the share of
tokens that needs a lost expert, and the probability that f random GPU failures lose any expert."""
import itertools
import math
import numbers


def _whole(x):
    return not isinstance(x, bool) and isinstance(x, numbers.Integral)


def _int(name, x, minimum):
    if not _whole(x) or x < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {x!r}")


def _placement(gpu_experts, num_experts):
    _int("num_experts", num_experts, 1)
    if not isinstance(gpu_experts, list) or not gpu_experts or any(
            not isinstance(g, list) or any(not _whole(e) or not 0 <= e < num_experts for e in g)
            for g in gpu_experts):
        raise ValueError(f"gpu_experts must be a non-empty list of lists of expert ids in [0, {num_experts}), "
                         f"got {gpu_experts!r}")


def _survivors(gpu_experts, num_experts, failed):
    count = [0] * num_experts
    for g, experts in enumerate(gpu_experts):
        if g not in failed:
            for e in experts:
                count[e] += 1
    return count


def lost_experts(gpu_experts, num_experts, failed):
    """Experts with no replica left on a surviving GPU, and the replicas left of each expert."""
    _placement(gpu_experts, num_experts)
    if not isinstance(failed, list) or len(set(failed)) != len(failed) or any(
            not _whole(g) or not 0 <= g < len(gpu_experts) for g in failed):
        raise ValueError(f"failed must be a list of distinct GPU indices in [0, {len(gpu_experts)}), got {failed!r}")
    count = _survivors(gpu_experts, num_experts, set(failed))
    return {"lost": [e for e in range(num_experts) if count[e] == 0], "replicas_left": count}


def token_loss_share(num_experts, topk, lost):
    """Share of tokens (uniform top-k routing over distinct experts) that need a lost expert."""
    _int("num_experts", num_experts, 1)
    _int("topk", topk, 1)
    if topk > num_experts:
        raise ValueError(f"topk must be at most the number of experts ({num_experts}), got {topk}")
    if not _whole(lost) or not 0 <= lost <= num_experts:
        raise ValueError(f"lost must be an integer in [0, {num_experts}] (the experts), got {lost!r}")
    return 1 - math.comb(num_experts - lost, topk) / math.comb(num_experts, topk)


def loss_probability(gpu_experts, num_experts, failures):
    """Probability, over every set of `failures` GPUs failing (all equally likely), that at least
    one expert has no replica left."""
    _placement(gpu_experts, num_experts)
    if not _whole(failures) or not 0 <= failures <= len(gpu_experts):
        raise ValueError(f"failures must be an integer in [0, {len(gpu_experts)}] (the GPUs), got {failures!r}")
    bad = total = 0
    for failed in itertools.combinations(range(len(gpu_experts)), failures):
        total += 1
        if 0 in _survivors(gpu_experts, num_experts, set(failed)):
            bad += 1
    return bad / total
