"""Reference solution for 133: choosing CUDA-graph capture sizes for decode batches."""
import numbers


def _whole(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")


def _batches(batches):
    if not isinstance(batches, list) or len(batches) == 0:
        raise ValueError("batches must be a non-empty list")
    for b in batches:
        if isinstance(b, bool) or not isinstance(b, numbers.Integral) or b < 1:
            raise ValueError(f"batches: every batch size is an integer >= 1, got {b!r}")


def padding_waste(batches, sizes, eager_cost):
    """Pad every step's batch to the smallest captured size that holds it; a batch above the
    largest runs eagerly and costs eager_cost slots. Totals and the mean waste per step."""
    _batches(batches)
    if not isinstance(sizes, list):
        raise ValueError("sizes must be a list")
    for s in sizes:
        if isinstance(s, bool) or not isinstance(s, numbers.Integral) or s < 1:
            raise ValueError(f"sizes: every captured size is an integer >= 1, got {s!r}")
    if len(set(sizes)) != len(sizes):
        raise ValueError("sizes must not repeat a size")
    _whole("eager_cost", eager_cost, 0)
    ordered = sorted(sizes)
    padded = eager = 0
    for b in batches:
        fit = [s for s in ordered if s >= b]
        if fit:
            padded += fit[0] - b
        else:
            eager += 1
    return {"padded_slots": padded, "eager_steps": eager,
            "waste": (padded + eager_cost * eager) / len(batches)}


def choose_sizes(batches, max_graphs, eager_cost):
    """At most max_graphs capture sizes with the least total waste (padding slots plus eager_cost
    per eager step); ties: fewer sizes, then the smaller sorted list."""
    _batches(batches)
    _whole("max_graphs", max_graphs, 0)
    _whole("eager_cost", eager_cost, 0)
    values = sorted(set(batches))
    m = len(values)
    count = [batches.count(v) for v in values]

    # With eager_cost > 0 every optimum uses min(max_graphs, m) sizes (one more size always helps),
    # and with eager_cost = 0 the empty list wins: so "fewer sizes, then the smaller list" is the
    # same as comparing (waste, list). Waste is kept in integer slots until the end.
    # best[r][p]: (waste, list) for the values above values[p], given values[p] is captured and at
    # most r more sizes may be captured above it.
    best = [[None] * m for _ in range(max_graphs)]
    for r in range(max_graphs):
        for p in range(m):
            option = (eager_cost * sum(count[p + 1:]), [])
            if r > 0:
                steps = slots = 0              # the steps between values[p] and values[q], their batches
                for q in range(p + 1, m):
                    steps += count[q]
                    slots += count[q] * values[q]
                    w, rest = best[r - 1][q]
                    option = min(option, (values[q] * steps - slots + w, [values[q]] + rest))
            best[r][p] = option
    answer = (eager_cost * len(batches), [])
    steps = slots = 0
    for p in range(m if max_graphs > 0 else 0):
        steps += count[p]
        slots += count[p] * values[p]
        w, rest = best[max_graphs - 1][p]
        answer = min(answer, (values[p] * steps - slots + w, [values[p]] + rest))
    return {"sizes": answer[1], "waste": answer[0] / len(batches)}
