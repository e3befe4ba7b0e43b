"""Reference solution for 143: a two-tier (GPU + host) KV block cache with LRU in each tier."""
import numbers


def run_two_tier(gpu_blocks, cpu_blocks, ops):
    """Serve block reads from a GPU tier backed by a CPU tier; one record per read."""
    if isinstance(gpu_blocks, bool) or not isinstance(gpu_blocks, numbers.Integral) or gpu_blocks < 1:
        raise ValueError(f"gpu_blocks must be an integer >= 1, got {gpu_blocks!r}")
    if isinstance(cpu_blocks, bool) or not isinstance(cpu_blocks, numbers.Integral) or cpu_blocks < 0:
        raise ValueError(f"cpu_blocks must be an integer >= 0, got {cpu_blocks!r}")
    if not isinstance(ops, list) or any(isinstance(b, bool) or not isinstance(b, (int, str)) for b in ops):
        raise ValueError("ops must be a list of block ids (integers or strings)")
    gpu, cpu = [], []              # least recently used first
    records = []
    for block in ops:
        if block in gpu:
            where = "gpu"
            gpu.remove(block)
        elif block in cpu:
            where = "cpu"
            cpu.remove(block)
        else:
            where = "miss"
        dropped = None
        if len(gpu) == gpu_blocks:
            victim = gpu.pop(0)
            if cpu_blocks > 0:
                if len(cpu) == cpu_blocks:
                    dropped = cpu.pop(0)
                cpu.append(victim)
            else:
                dropped = victim
        gpu.append(block)
        records.append({"where": where, "dropped": dropped, "gpu": list(gpu), "cpu": list(cpu)})
    return records


def read_time_ms(records, block_bytes, pcie_gbs, recompute_ms):
    """Time to make the read blocks resident: host blocks over PCIe, missed blocks recomputed."""
    if isinstance(block_bytes, bool) or not isinstance(block_bytes, numbers.Real) or not 0 < block_bytes < float("inf"):
        raise ValueError(f"block_bytes must be a finite number > 0, got {block_bytes!r}")
    if isinstance(pcie_gbs, bool) or not isinstance(pcie_gbs, numbers.Real) or not 0 < pcie_gbs < float("inf"):
        raise ValueError(f"pcie_gbs must be a finite number > 0, got {pcie_gbs!r}")
    if isinstance(recompute_ms, bool) or not isinstance(recompute_ms, numbers.Real) or not 0 <= recompute_ms < float("inf"):
        raise ValueError(f"recompute_ms must be a finite number >= 0, got {recompute_ms!r}")
    if not isinstance(records, list) or any(not isinstance(r, dict) or r.get("where") not in ("gpu", "cpu", "miss")
                                            for r in records):
        raise ValueError("records must be a list of records with where in gpu / cpu / miss")
    from_cpu = sum(1 for r in records if r["where"] == "cpu")
    misses = sum(1 for r in records if r["where"] == "miss")
    return from_cpu * block_bytes / (pcie_gbs * 1e9) * 1e3 + misses * recompute_ms
