"""vLLM V1's prefix-caching tests, ported onto the plain vLLM reference (tests/vllm_reference.py).

Each test names the vLLM test it comes from (``tests/v1/core/test_prefix_caching.py`` at vLLM
commit 003df2961dd8830c317a61f9745ccd557da9fa06). vLLM's tests call the KV cache manager
directly (``get_computed_blocks``, ``allocate_slots``, ``free``); the ports reach the same states
through the scheduler: requests with ``max_tokens = 1`` free their blocks at the end of their
first step, and a request added between steps is vLLM's next ``allocate_slots`` call. Token ids
become prefix segments: requests that share tokens share a segment key. Block ids here are
vLLM's minus one (vLLM's block 0 is its null block), so vLLM's [5, 4, 6, ...] reads [4, 3, 5, ...].
"""

import pytest

from vllm_reference import block_name, vllm_stepper

COMMON = 1                      # the key of a shared 48-token (3-block) prompt head


def ids(vllm_ids):
    return [b - 1 for b in vllm_ids]


def free_order(s):
    return list(s.pool.free_queue)


def test_prefill():
    """vLLM test_prefix_caching.py::test_prefill: blocks of 16, 11 blocks. req0 (48 common + 7
    tokens) takes blocks [1, 2, 3, 4]; req1 (48 common + 5), admitted while req0 still runs, hits
    [1, 2, 3] (held twice) and takes [5]. Freed (req0 then req1), the partial blocks go to the
    head and the named ones to the tail: [5, 4, 6, 7, 8, 9, 10, 3, 2, 1]. req2 (48 common + 6)
    hits [1, 2, 3] again and reuses [5]; a 160-token miss then takes all ten blocks in queue order,
    the named ones last (the eviction order)."""
    s = vllm_stepper(block_size=16, vllm_blocks=11, caching=True)
    s.add(0.0, 55, 2, prefix=((COMMON, 48),))
    s.step()
    assert s.reqs[0].blocks == ids([1, 2, 3, 4])
    assert [s.pool.name[b] is not None for b in s.reqs[0].blocks] == [True, True, True, False]
    s.add(s.now, 53, 1, prefix=((COMMON, 48),))
    step = s.step()
    assert step.hits == {1: 48} and step.scheduled == {0: 1, 1: 5}
    assert s.done()                                   # both freed at this step's end
    assert free_order(s) == ids([5, 4, 6, 7, 8, 9, 10, 3, 2, 1])
    s.add(s.now, 54, 1, prefix=((COMMON, 48),))
    step = s.step()
    assert step.hits == {2: 48}
    assert free_order(s) == ids([5, 4, 6, 7, 8, 9, 10, 3, 2, 1])    # req2 is done too
    s.add(s.now, 160, 1)
    step = s.step()
    assert step.held[3] == ids([5, 4, 6, 7, 8, 9, 10, 3, 2, 1])
    assert [b for b, _ in s.pool.evicted] == ids([3, 2, 1])


def test_prefill_shared_block_counts():
    """vLLM test_prefix_caching.py::test_prefill, its reference counts: while req0 and req1 both
    run, the three shared blocks are held twice and 5 blocks are free."""
    s = vllm_stepper(block_size=16, vllm_blocks=11, caching=True)
    s.add(0.0, 55, 3, prefix=((COMMON, 48),))
    s.step()
    s.add(s.now, 53, 2, prefix=((COMMON, 48),))
    s.step()
    assert [s.pool.ref[b] for b in ids([1, 2, 3])] == [2, 2, 2]
    assert s.pool.num_free() == 5


def test_decode():
    """vLLM test_prefix_caching.py::test_decode: a 55-token prompt (3 full blocks + 7). After 4
    output tokens (59 slots) it still holds 4 blocks, the last unnamed; once 19 more tokens
    fill the 4th block (78 slots) it holds 5, the 4th named, the 5th not."""
    s = vllm_stepper(block_size=16, vllm_blocks=11, caching=True)
    s.add(0.0, 55, 40, prefix=((COMMON, 48),))
    r = s.reqs[0]
    for _ in range(5):                    # the prefill, then 4 decode steps: slots for 59 tokens
        s.step()
    assert r.num_computed + 1 == 60 and len(r.blocks) == 4 and s.pool.name[r.blocks[3]] is None
    for _ in range(19):                   # slots for 78 tokens
        s.step()
    assert len(r.blocks) == 5
    assert s.pool.name[r.blocks[3]] == ("private", 0, 3) and s.pool.name[r.blocks[4]] is None


def test_evict():
    """vLLM test_prefix_caching.py::test_evict: req0 (5 x 16 + 7 tokens) takes 6 blocks, req1
    (48 other tokens) 3; 1 is free. Freed, req0's partial block goes to the head and its named
    blocks to the tail, then req1's: [6, 10, 5, 4, 3, 2, 1, 9, 8, 7]. req2 (the first 35 tokens
    of req0) hits [1, 2] and takes the head, [6]; 7 blocks stay free."""
    s = vllm_stepper(block_size=16, vllm_blocks=11, caching=True)
    s.add(0.0, 87, 1, prefix=((1, 32), (2, 87)))
    s.add(0.0, 48, 1, prefix=((3, 48),))
    step = s.step()
    assert step.scheduled == {0: 87, 1: 48}
    assert free_order(s) == ids([6, 10, 5, 4, 3, 2, 1, 9, 8, 7])
    s.add(s.now, 35, 2, prefix=((1, 32), (4, 35)))
    step = s.step()
    assert step.hits == {2: 32}
    assert s.reqs[2].blocks == ids([1, 2, 6]) and s.pool.num_free() == 7


def test_hash_block_correct_reuse():
    """vLLM test_prefix_caching.py::test_hash_block_correct_reuse: one usable block. A 16-token
    request names it; a 15-token request then takes it, and it loses the old name."""
    s = vllm_stepper(block_size=16, vllm_blocks=2, caching=True)
    s.add(0.0, 16, 1)
    s.step()
    (b,) = s.pool.free_queue
    assert s.pool.name[b] == ("private", 0, 0)
    s.add(s.now, 15, 1)
    step = s.step()
    assert step.held[1] == [b] and s.pool.evicted == [(b, ("private", 0, 0))]
    assert s.pool.name[b] is None and s.pool.cached == {}


def test_computed_blocks_not_evicted():
    """vLLM test_prefix_caching.py::test_computed_blocks_not_evicted: two usable blocks, each
    named by a 16-token request. A 32-token request starting with the first one's tokens hits
    block 1 and takes block 2 (evicting the second request's block, not the hit)."""
    s = vllm_stepper(block_size=16, vllm_blocks=3, caching=True)
    s.add(0.0, 16, 1, prefix=((1, 16),))
    s.add(0.0, 16, 1, prefix=((2, 16),))
    s.step()
    assert free_order(s) == ids([1, 2])
    s.add(s.now, 32, 1, prefix=((1, 16), (3, 32)))
    step = s.step()
    assert step.hits == {2: 16} and step.held[2] == ids([1, 2])
    assert s.pool.evicted == [(ids([2])[0], block_name(s.reqs[1], 0, 16))]


def test_basic_prefix_caching_disabled():
    """vLLM test_prefix_caching.py::test_basic_prefix_caching_disabled: blocks of 4, 5 blocks,
    caching off. A 10-token request takes 3 blocks; a 16-token one with the same head gets no hit
    (4 blocks), and a 4-token one arriving with it is refused: no block is free."""
    s = vllm_stepper(block_size=4, vllm_blocks=5, caching=False)
    s.add(0.0, 10, 1, prefix=((1, 10),))
    s.step()
    assert len(s.reqs[0].blocks) == 0 and s.reqs[0].finish is not None
    s.add(s.now, 16, 1, prefix=((1, 16),))
    s.add(s.now, 4, 1)
    step = s.step()
    assert step.scheduled == {1: 16} and step.hits == {1: 0} and s.waiting_ids() == [2]
    assert s.pool.cached == {}


def test_prefill_not_enough_free_blocks_with_computed_blocks():
    """vLLM test_prefix_caching.py::test_prefill_not_enough_free_blocks_with_computed_blocks:
    blocks of 16, 11 blocks. req0 (48 common tokens) runs; req1 (common x 2) hits its 3 blocks and
    computes 3 more, then finishes: its own blocks are free (count 0), the shared ones held by req0
    (count 1). req2 (32 other tokens) takes 2 blocks: 4 free (req0 took a 4th block to decode).
    req3 (common x 3) would hit req1's 6 blocks but needs 9 - 6 + 3 = 6 with 3 free (req2's
    first decode took a 3rd block): refused, and the counts of its would-be hits are untouched."""
    s = vllm_stepper(block_size=16, vllm_blocks=11, caching=True)
    head, twice, thrice = (COMMON, 48), (2, 96), (3, 144)
    s.add(0.0, 48, 20, prefix=(head,))
    s.add(0.0, 96, 1, prefix=(head, twice))
    step = s.step()
    assert step.scheduled == {0: 48, 1: 48} and step.hits == {0: 0, 1: 48}
    part1 = [s.pool.cached_block(block_name(s.reqs[1], j, 16)) for j in range(6)]
    assert [s.pool.ref[b] for b in part1] == [1, 1, 1, 0, 0, 0]
    s.add(s.now, 32, 20, prefix=((4, 32),))
    step = s.step()
    assert step.scheduled == {0: 1, 2: 32} and s.pool.num_free() == 4
    s.add(s.now, 144, 1, prefix=(head, twice, thrice))
    step = s.step()
    assert step.scheduled == {0: 1, 2: 1} and s.waiting_ids() == [3] and s.pool.num_free() == 3
    assert [s.pool.ref[b] for b in part1] == [1, 1, 1, 0, 0, 0]


def test_cache_key_salting():
    """vLLM test_prefix_caching.py::test_cache_key_salting: the same tokens under another cache
    salt are another key: a request with salt 1 hits the 3 blocks of an earlier salt-1 request,
    one with salt 2 hits nothing."""
    s = vllm_stepper(block_size=16, vllm_blocks=11, caching=True)
    salt1, salt2 = (11, 48), (12, 48)
    s.add(0.0, 59, 1, prefix=(salt1,))
    s.step()
    s.add(s.now, 59, 1, prefix=(salt1,))
    s.add(s.now, 59, 1, prefix=(salt2,))
    step = s.step()
    assert step.hits == {1: 48, 2: 0}


def test_full_sequence_gate_refuses_oversized_prompt():
    """vLLM test_prefix_caching.py::test_can_fit_full_sequence_full_attention_still_gates_oversized,
    its full-attention group only: 5 blocks of 16 (4 usable), a 16-block prompt whose first chunk
    (one block) would fit: refused by the whole-sequence check, forever."""
    s = vllm_stepper(block_size=16, vllm_blocks=5, budget=16, caching=True)
    s.add(0.0, 256, 1)
    with pytest.raises(RuntimeError, match="request 0 .* can never be admitted"):
        s.step()


def test_duplicate_blocks_first_cached_serves_hits():
    """After vLLM test_prefix_caching.py::test_maybe_evict_cached_block (a name held by two
    blocks), reached through the scheduler (hand-worked): blocks of 16, budget 100,
    long_prefill_token_threshold 32, two 64-token prompts with one key. Step 1: A computes 32
    (names its blocks 0, 1); B, admitted after it, hits them and computes blocks 2, 3 itself.
    Step 2: A computes its blocks 2, 3: their names are now held twice. C then hits A's blocks
    0, 1 and B's block 2 (the first cached under that name)."""
    s = vllm_stepper(block_size=16, caching=True, budget=100, threshold=32)
    p = ((1, 64),)
    s.add(0.0, 64, 8, prefix=p)
    s.add(0.0, 64, 8, prefix=p)
    step1, step2 = s.step(), s.step()
    assert step1.scheduled == {0: 32, 1: 32} and step1.hits == {0: 0, 1: 32}
    assert step2.scheduled == {0: 32, 1: 1}
    a, b = s.reqs[0].blocks, s.reqs[1].blocks
    assert a[:2] == b[:2] and a[2] != b[2]
    assert list(s.pool.cached[block_name(s.reqs[0], 2, 16)]) == [b[2], a[2]]
    s.add(s.now, 64, 1, prefix=p)
    step3 = s.step()
    assert step3.hits == {2: 48} and step3.held[2][:3] == [a[0], a[1], b[2]]
