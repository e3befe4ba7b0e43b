"""Hidden cases for 179: a tensor that fills a bucket exactly, one byte over, oversized tensors,
one bucket for everything, one bucket per tensor; update times with apply faster and slower than the
link, no per-bucket cost, a 70B shard; random cases vs the reference (and the reference checked: the
pipeline is never slower than serial, nor faster than either stage alone). Buckets exactly, times with
rtol=1e-9."""
import random

import pytest

import reference
import submission
from judgekit import call, check_close

RTOL = 1e-9
GB = 10**9


def both(name, *args):
    expected = getattr(reference, name)(*args)
    got = call(submission, name)(*args)
    return got, expected


def test_exact_fill_stays_in_the_bucket():
    check_close(*both("make_buckets", [2, 3, 5], 5))


def test_one_byte_over_starts_a_new_bucket():
    check_close(*both("make_buckets", [2, 4, 5], 5))


def test_oversized_tensors_alone():
    check_close(*both("make_buckets", [9, 1, 12, 1, 1], 5))


def test_one_bucket_for_everything():
    check_close(*both("make_buckets", [1, 2, 3], 100))


def test_one_bucket_per_tensor():
    check_close(*both("make_buckets", [4, 4, 4], 4))
    check_close(*both("make_buckets", [4, 4, 4], 1))


def test_single_tensor():
    check_close(*both("make_buckets", [7], 3))


def test_time_apply_faster_than_link():
    check_close(*both("update_time", [2 * GB] * 5, 4 * GB, 25, 400, 0.005), rtol=RTOL)


def test_time_apply_slower_than_link():
    check_close(*both("update_time", [2 * GB] * 5, 4 * GB, 400, 25, 0.005), rtol=RTOL)


def test_time_no_per_bucket_cost_one_bucket():
    check_close(*both("update_time", [GB, GB], 10 * GB, 50, 100, 0.0), rtol=RTOL)


def test_time_many_small_buckets_pay_the_overhead():
    check_close(*both("update_time", [10**6] * 200, 10**6, 50, 200, 0.002), rtol=RTOL)
    check_close(*both("update_time", [10**6] * 200, 10**8, 50, 200, 0.002), rtol=RTOL)


def test_time_70b_tp8_shard():
    rng = random.Random(5)
    tensors = [rng.choice([117440512, 58720256, 16384, 8192, 469762048]) for _ in range(300)]
    check_close(*both("update_time", tensors, 512 * 2**20, 50, 1000, 0.001), rtol=RTOL)


_rng = random.Random(179)
RANDOM = []
for _ in range(25):
    tensors = [_rng.randint(1, 10**9) for _ in range(_rng.randint(1, 60))]
    RANDOM.append((tensors, _rng.randint(1, 3 * 10**9), _rng.uniform(5, 400), _rng.uniform(5, 1000),
                   _rng.choice([0.0, 0.001, 0.01])))


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    tensors, bucket, link, apply, per = RANDOM[index]
    check_close(*both("make_buckets", tensors, bucket))
    got, expected = both("update_time", tensors, bucket, link, apply, per)
    total = sum(tensors)
    floor = max(total / (link * 1e9) + per * expected["buckets"], total / (apply * 1e9))
    if not floor * (1 - 1e-12) <= expected["pipelined_s"] <= expected["serial_s"] * (1 + 1e-12):
        raise RuntimeError("the reference's pipelined time is out of its bounds")
    check_close(got, expected, rtol=RTOL)
