"""Reference solution for 156: RL rollouts sample each prompt n times (GRPO-style groups): the KV
blocks a group needs with and without sharing the prompt, and the prefill tokens with a prefix cache
that reuses whole blocks."""
import numbers


def _int(name, x, minimum):
    if isinstance(x, bool) or not isinstance(x, numbers.Integral) or x < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {x!r}")


def _ceil(a, b):
    return -(-a // b)


def group_kv_blocks(prompt_len, output_lens, block_size):
    """Without sharing each sample holds ceil((P + O_i) / B) blocks. With sharing the P // B full
    prompt blocks are held once; each sample holds its own copy of the partial last prompt block
    (it writes its tokens there) and its output: ceil((P % B + O_i) / B)."""
    _int("prompt_len", prompt_len, 1)
    if not isinstance(output_lens, list) or not output_lens or any(
            isinstance(o, bool) or not isinstance(o, numbers.Integral) or o < 0 for o in output_lens):
        raise ValueError(f"output_lens must be a non-empty list of integers >= 0, got {output_lens!r}")
    _int("block_size", block_size, 1)
    full, rest = divmod(prompt_len, block_size)
    unshared = sum(_ceil(prompt_len + o, block_size) for o in output_lens)
    shared = full + sum(_ceil(rest + o, block_size) for o in output_lens)
    return {"shared": shared, "unshared": unshared}


def rollout_prefill_tokens(prompt_lens, n, block_size):
    """Each prompt is sampled n times, one after another. The first sample computes the whole prompt;
    each later one reuses the cached full blocks, at most P - 1 tokens (the last token is always
    recomputed for its logits): it computes P - B x floor((P - 1) / B) tokens."""
    if not isinstance(prompt_lens, list) or any(
            isinstance(p, bool) or not isinstance(p, numbers.Integral) or p < 1 for p in prompt_lens):
        raise ValueError(f"prompt_lens must be a list of integers >= 1, got {prompt_lens!r}")
    _int("n", n, 1)
    _int("block_size", block_size, 1)
    without = n * sum(prompt_lens)
    with_cache = sum(p + (n - 1) * (p - block_size * ((p - 1) // block_size)) for p in prompt_lens)
    return {"without_cache": without, "with_cache": with_cache,
            "saved_fraction": 1 - with_cache / without if without else 0.0}
