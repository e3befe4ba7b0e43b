"""Reference solution for 128: the flat batch layout of one mixed (prefill + decode) forward."""
import numbers


def _int(name, value, minimum):
    return not (isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum)


def batch_layout(entries, block_size):
    """Order the step's sequences (decodes first) and build the flat metadata of one forward."""
    if isinstance(block_size, bool) or not isinstance(block_size, numbers.Integral) or block_size < 1:
        raise ValueError(f"block_size must be an integer >= 1, got {block_size!r}")
    if not isinstance(entries, list) or len(entries) == 0:
        raise ValueError("entries must be a non-empty list")
    for e in entries:
        if not isinstance(e, dict) or set(e) != {"seq", "context", "new", "prompt_len", "blocks"}:
            raise ValueError(f"entries: each entry has seq, context, new, prompt_len, blocks: {e!r}")
        if not (_int("context", e["context"], 0) and _int("new", e["new"], 1) and _int("prompt_len", e["prompt_len"], 1)):
            raise ValueError(f"entries: context >= 0, new >= 1, prompt_len >= 1 (integers): {e!r}")
        if not isinstance(e["blocks"], list) or not all(_int("blocks", b, 0) for b in e["blocks"]):
            raise ValueError(f"entries: blocks is a list of block numbers (integers >= 0): {e!r}")
        if len(e["blocks"]) * block_size < e["context"] + e["new"]:
            raise ValueError(f"entries: the block table cannot hold context + new tokens: {e!r}")
        if e["context"] < e["prompt_len"] and e["context"] + e["new"] > e["prompt_len"]:
            raise ValueError(f"entries: a prefill chunk may not run past its prompt: {e!r}")
    decodes = [e for e in entries if e["context"] >= e["prompt_len"]]
    prefills = [e for e in entries if e["context"] < e["prompt_len"]]
    order = decodes + prefills
    query_start, positions, slots, logits = [0], [], [], []
    for e in order:
        for pos in range(e["context"], e["context"] + e["new"]):
            positions.append(pos)
            slots.append(e["blocks"][pos // block_size] * block_size + pos % block_size)
        query_start.append(query_start[-1] + e["new"])
        if e["context"] + e["new"] >= e["prompt_len"]:
            logits.append(query_start[-1] - 1)
    return {
        "order": [e["seq"] for e in order],
        "num_decodes": len(decodes),
        "query_start_loc": query_start,
        "seq_lens": [e["context"] + e["new"] for e in order],
        "positions": positions,
        "slot_mapping": slots,
        "logits_indices": logits,
    }
