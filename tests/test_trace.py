"""Trace readers (sim.trace): Mooncake's and Azure's formats, prefix identity from block ids, time
rescaling and windows, errors naming line and field, and the shipped files against their sources'
published figures."""
import gzip
import json
from pathlib import Path

import numpy as np
import pytest

import sim
from sim import trace, workload
from sim.kv import Paged, PrefixCache

DATA = Path(__file__).resolve().parents[1] / "data" / "traces"


def write_mooncake(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def M(t_ms, n, out, ids):
    return {"timestamp": t_ms, "input_length": n, "output_length": out, "hash_ids": ids}


# --- Mooncake ------------------------------------------------------------------------------------

def test_mooncake_fields_and_prefix_segments(tmp_path):
    path = write_mooncake(tmp_path / "m.jsonl", [M(0, 1300, 5, [7, 8, 9]), M(1500, 512, 3, [7])])
    t = trace.read(path)                                  # auto: hash_ids make it Mooncake's
    assert t.arrival == (0.0, 1.5) and t.input_len == (1300, 512) and t.output_len == (5, 3)
    assert t.hash_ids == ((7, 8, 9), (7,)) and t.block_tokens == 512
    # block j is the segment (id, end of block j), the last one ending at the prompt's end
    assert t.prefix() == (((7, 512), (8, 1024), (9, 1300)), ((7, 512),))


def cached_tokens_of_second(block_size, first_ids, second_ids, n1=1300, n2=1200):
    """Cached prompt tokens of a request arriving after an earlier one finished, on one instance."""
    from conftest import tiny_setup
    setup = tiny_setup(budget=4096, cap=100_000).replace(kv=Paged(block_size=block_size),
                                                        prefix_cache=PrefixCache())
    t = trace.Trace("t", (0.0, 100.0), (n1, n2), (2, 2), (tuple(first_ids), tuple(second_ids)), 512)
    w = workload.trace(t)
    assert w.prefix == t.prefix()
    return int(sim.run(setup, w).cached_tokens[1])


def test_shared_block_ids_hit_for_any_block_size():
    # two trace blocks shared (1024 tokens); the third differs
    assert cached_tokens_of_second(16, [1, 2, 3], [1, 2, 9]) == 1024
    # a 768-token simulated block spans trace blocks 0 and 1: named by block 1's id, so it hits;
    # the next simulated block ends past the shared part and is partial in the second prompt
    assert cached_tokens_of_second(768, [1, 2, 3], [1, 2, 9]) == 768
    # only block 0 shared: a 768-token block covers a differing trace block, so nothing hits
    assert cached_tokens_of_second(768, [1, 2, 3], [1, 5, 9]) == 0
    assert cached_tokens_of_second(16, [1, 2, 3], [1, 5, 9]) == 512
    # no shared id at position 0: no hit even if later ids coincide (ids are chain hashes)
    assert cached_tokens_of_second(16, [1, 2, 3], [4, 2, 3]) == 0


def test_no_hash_ids_no_prefix(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("arrival,input_len,output_len\n0,10,2\n")
    assert trace.read(path).prefix() is None and workload.trace(path).prefix is None


# --- Azure ---------------------------------------------------------------------------------------

AZURE = ("TIMESTAMP,ContextTokens,GeneratedTokens\n"
         "2023-11-16 18:17:03.9799600,4808,10\n"
         "2023-11-16 18:17:04.0319600,3180,8\n"
         "2023-11-16 18:17:04.0781890,110,27\n"
         "2023-11-17 00:00:00,5,1\n")


def test_azure_timestamps_are_seconds_after_the_first_row(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text(AZURE)
    t = trace.azure(path)
    # integer nanoseconds, then one division: 0.052 s is 0.052 exactly as a float literal
    assert t.arrival[:3] == (0.0, 0.052, 0.098229)
    assert t.arrival[3] == 20576.02004                   # midnight, 5 h 42 min 56.02004 s later
    assert t.input_len == (4808, 3180, 110, 5) and t.output_len == (10, 8, 27, 1)
    assert trace.read(path).arrival == t.arrival          # auto: the TIMESTAMP header


@pytest.mark.parametrize("text, message", [
    ("TIMESTAMP,ContextTokens\n2023-11-16 18:17:03.9,1\n", "line 1: header lacks column.*GeneratedTokens"),
    ("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16T18:17:03,1,1\n", "line 2, column 'TIMESTAMP'"),
    ("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.1234567890,1,1\n", "line 2, column 'TIMESTAMP'"),
    ("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:04,1,1\n2023-11-16 18:17:03,1,1\n",
     "line 3, column 'TIMESTAMP'.*sort"),
    ("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:04,0,1\n", "line 2, column 'ContextTokens'"),
])
def test_azure_errors_name_line_and_field(tmp_path, text, message):
    path = tmp_path / "a.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        trace.azure(path)


@pytest.mark.parametrize("row, message", [
    ({"timestamp": 0, "input_length": 600, "output_length": 1, "hash_ids": [1]}, "line 1, column 'hash_ids': 1 block ids.*need 2"),
    ({"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [True]}, "line 1, column 'hash_ids'"),
    ({"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": "1"}, "line 1, column 'hash_ids'"),
    ({"timestamp": -5, "input_length": 10, "output_length": 1, "hash_ids": [1]}, "line 1, column 'timestamp'"),
    ({"timestamp": 0, "input_length": 10, "output_length": 0, "hash_ids": [1]}, "line 1, column 'output_length'"),
    ({"timestamp": 0, "output_length": 1, "hash_ids": [1]}, "line 1, column 'input_length': missing"),
])
def test_mooncake_errors_name_line_and_field(tmp_path, row, message):
    path = write_mooncake(tmp_path / "m.jsonl", [row])
    with pytest.raises(ValueError, match=message):
        trace.mooncake(path)


def test_format_argument_and_unknown_format(tmp_path):
    path = write_mooncake(tmp_path / "m.jsonl", [M(0, 10, 1, [1])])
    with pytest.raises(ValueError, match="format must be one of"):
        trace.read(path, "parquet")
    with pytest.raises(ValueError, match="column 'arrival': missing"):
        trace.read(path, "jsonl")                        # the plain format wants its own columns
    odd = tmp_path / "m.txt"
    odd.write_text("x")
    with pytest.raises(ValueError, match="unknown format"):
        trace.read(odd)


def test_gzip_is_read_transparently(tmp_path):
    plain = write_mooncake(tmp_path / "m.jsonl", [M(0, 700, 1, [1, 2]), M(10, 5, 2, [3])])
    packed = tmp_path / "m.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    a, b = trace.read(plain), trace.read(packed)
    assert (a.arrival, a.input_len, a.hash_ids) == (b.arrival, b.input_len, b.hash_ids)


# --- rescaling and windows -----------------------------------------------------------------------

def test_scaled_and_window(tmp_path):
    path = write_mooncake(tmp_path / "m.jsonl", [M(0, 10, 1, [1]), M(1000, 20, 2, [2]), M(3000, 30, 3, [3]),
                                                 M(4000, 40, 4, [4])])
    t = trace.read(path)
    fast = t.scaled(2)
    assert fast.arrival == (0.0, 0.5, 1.5, 2.0) and fast.hash_ids == t.hash_ids
    cut = t.window(1.0, 3.0)                              # [1, 4): requests 1 and 2, shifted to 0
    assert cut.arrival == (0.0, 2.0) and cut.input_len == (20, 30) and cut.hash_ids == ((2,), (3,))
    assert t.window(3.0).arrival == (0.0, 1.0)            # to the end
    w = workload.trace(path, start_s=1.0, duration_s=3.0, speed=2)
    assert w.arrival == (0.0, 1.0) and w.prefix == ((((2, 20),)), ((3, 30),))
    for bad, message in ((lambda: t.scaled(0), "speed"), (lambda: t.scaled(float("inf")), "speed"),
                         (lambda: t.window(-1), "start_s"), (lambda: t.window(0, 0), "duration_s"),
                         (lambda: t.window(10.0, 1.0), "holds no request")):
        with pytest.raises(ValueError, match=message):
            bad()


# --- the shipped files ---------------------------------------------------------------------------

def test_shipped_mooncake_trace_matches_its_readme():
    t = trace.mooncake(DATA / "mooncake_conversation_trace.jsonl.gz")
    # FAST25-release/README.md: 12,031 requests, mean input 12,035 and output 343 tokens, one hour
    assert len(t) == 12031
    assert round(np.mean(t.input_len)) == 12035 and round(np.mean(t.output_len)) == 343
    assert 3500 < t.duration_s <= 3600


@pytest.mark.parametrize("name, count, median_in, median_out", [
    ("AzureLLMInferenceTrace_code.csv.gz", 8819, 1469, 13),
    ("AzureLLMInferenceTrace_conv.csv.gz", 19366, 1020, 129),
])
def test_shipped_azure_traces(name, count, median_in, median_out):
    t = trace.azure(DATA / name)
    assert len(t) == count
    assert np.median(t.input_len) == median_in and np.median(t.output_len) == median_out
    assert 3400 < t.duration_s < 3600


def test_licences_and_citations_ship_with_the_data():
    readme = (DATA / "README.md").read_text()
    assert "Apache-2.0" in readme and "CC-BY 4.0" in readme and "Splitwise" in readme and "FAST '25" in readme
    assert (DATA / "LICENSE-Mooncake-Apache-2.0.txt").read_text().strip().startswith("Apache License")
    assert "Attribution 4.0 International" in (DATA / "LICENSE-AzurePublicDataset-CC-BY-4.0.txt").read_text()
