"""benchmarks/what_if.py: step-model terms scored by bench_validation but kept out of the presets.

Each term is checked against numbers worked by hand from its docstring's formula, and ``apply``
against the Setup fields it may touch (and only those)."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import fidelity as F          # noqa: E402
import what_if as W           # noqa: E402

from sim import presets       # noqa: E402

def test_swiglu_is_the_separate_pass_over_the_presets_fused_set():
    bw = presets.GPUS["h200"].bandwidth
    got = W.swiglu_s_per_token("llama-2-70b", "h200", 2, "fp8", "fp8")
    assert got == pytest.approx(80 * 5 * 28672 / 2 / (0.55 * bw), rel=1e-9)


def _row(rid):
    return next(r for r in F.load_rows() if r.id == rid)


def test_apply_touches_only_the_per_token_time():
    r = _row("mlperf-v5.0-cisco-c885a-h200x8-llama3.1-405b-server-tok")
    setup = F.setup_for(r)
    args = (F.preset_model(r), r.gpu, r.tp, r.weight_dtype, r.kv_dtype)
    added = W.apply(setup, ("swiglu",), *args)
    changed = {k for k in setup.__dataclass_fields__ if getattr(setup, k) != getattr(added, k)}
    assert changed == {"comm_s_per_token"}
    assert added.comm_s_per_token == setup.comm_s_per_token + W.swiglu_s_per_token(*args)
    assert W.apply(setup, (), *args) is setup


def test_fidelity_adds_the_what_if_to_every_row(monkeypatch):
    r = _row("nim-1.8.0-h100-llama3.3-70b-fp8-tp2-5000-500-c5-itl_s")
    monkeypatch.setattr(F, "WHAT_IF", ("swiglu",))
    got = F.setup_for(r)
    monkeypatch.setattr(F, "WHAT_IF", ())
    plain = F.setup_for(r)
    assert got == W.apply(plain, ("swiglu",), F.preset_model(r), r.gpu, r.tp, r.weight_dtype, r.kv_dtype)


def test_apply_names_the_allowed_terms():
    setup = presets.instance("llama-2-70b", "h200", weight_dtype="fp8")
    for gone in ("allreduce", "elementwise"):          # moved into the presets
        with pytest.raises(ValueError, match="swiglu"):
            W.apply(setup, (gone,), "llama-2-70b", "h200", 1, "fp8", "fp8")


def test_rows_slice_by_their_sources_year():
    r = _row("mlperf-v4.1-nvidia-h200x8-llama2-70b-99-server-tok")
    assert r.slice_keys["slice/year"] == "capacity at the SLO / 2024"
    r = _row("mlperf-v5.0-cisco-c885a-h200x8-llama3.1-405b-server-tok")
    assert r.slice_keys["slice/year"] == "capacity at the SLO / 2025"
    assert F.source_year("no-such-source") == "undated"
