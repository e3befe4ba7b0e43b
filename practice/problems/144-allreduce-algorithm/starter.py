"""144. 估算：选哪种 all-reduce 算法。

Write the four functions below; see problem.md for the formulas and the worked example.
Judge with:  python practice/judge.py 144
"""


def allreduce_time_us(algorithm, message_bytes, gpus, *, alpha_us, link_gbs):
    """Microseconds of one all-reduce with "one_shot", "two_shot", "ring" or "nvls"."""
    raise NotImplementedError


def choose_allreduce(message_bytes, gpus, *, alpha_us, link_gbs, topology):
    """Return {"algorithm", "time_us"}: the fastest algorithm that topology offers."""
    raise NotImplementedError


def crossover_bytes(gpus, *, alpha_us, link_gbs):
    """Message size where one-shot and two-shot take equal time; None when gpus == 2."""
    raise NotImplementedError


def bus_bandwidth_gbs(message_bytes, time_us, gpus):
    """message_bytes / (time_us * 1e3) * 2 * (gpus - 1) / gpus."""
    raise NotImplementedError
