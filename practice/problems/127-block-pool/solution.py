"""Reference solution for 127: a paged-KV block pool with fork and copy-on-write."""
import numbers


def _count(name, value, minimum=1):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")


def _blocks_for(tokens, block_size):
    return -(-tokens // block_size)


def run_block_pool(num_blocks, block_size, ops):
    """Run the operations on a pool of ``num_blocks`` blocks; one record per operation."""
    _count("num_blocks", num_blocks)
    _count("block_size", block_size)
    if not isinstance(ops, list):
        raise ValueError("ops must be a list of operations")
    refs = [0] * num_blocks
    tables, lengths = {}, {}
    records = []

    def take(n):
        free = [b for b in range(num_blocks) if refs[b] == 0][:n]
        for b in free:
            refs[b] = 1
        return free

    for op in ops:
        if not isinstance(op, list) or not op or op[0] not in ("alloc", "append", "fork", "free"):
            raise ValueError(f"ops: unknown operation {op!r}")
        kind = op[0]
        free_now = refs.count(0)
        ok, copies, seq = True, 0, None
        if kind in ("alloc", "append"):
            if len(op) != 3:
                raise ValueError(f"ops: {kind} takes a sequence and a token count: {op!r}")
            seq, n = op[1], op[2]
            if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
                raise ValueError(f"ops: the token count must be an integer >= 1: {op!r}")
            if (seq in tables) == (kind == "alloc"):
                raise ValueError(f"ops: {kind} of {'an existing' if kind == 'alloc' else 'an unknown'} sequence {seq!r}")
            if kind == "alloc":
                need = _blocks_for(n, block_size)
                if need > free_now:
                    ok = False
                else:
                    tables[seq], lengths[seq] = take(need), n
            else:
                length, table = lengths[seq], tables[seq]
                cow = length % block_size != 0 and refs[table[-1]] > 1
                need = _blocks_for(length + n, block_size) - _blocks_for(length, block_size) + (1 if cow else 0)
                if need > free_now:
                    ok = False
                else:
                    if cow:
                        copy = take(1)[0]
                        refs[table[-1]] -= 1
                        table[-1] = copy
                        copies = 1
                    table.extend(take(need - copies))
                    lengths[seq] = length + n
        elif kind == "fork":
            if len(op) != 3 or op[1] not in tables or op[2] in tables:
                raise ValueError(f"ops: fork needs a known parent and a new child: {op!r}")
            parent, seq = op[1], op[2]
            tables[seq], lengths[seq] = list(tables[parent]), lengths[parent]
            for b in tables[seq]:
                refs[b] += 1
        else:
            if len(op) != 2 or op[1] not in tables:
                raise ValueError(f"ops: free of an unknown sequence: {op!r}")
            for b in tables.pop(op[1]):
                refs[b] -= 1
            del lengths[op[1]]
        records.append({"ok": ok, "copies": copies, "free": refs.count(0),
                        "table": list(tables[seq]) if seq in tables else [], "refs": list(refs)})
    return records
