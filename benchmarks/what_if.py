"""What-if terms of the step model that are not in the presets, for bench_validation to score.

    .venv/bin/python benchmarks/bench_validation.py --what-if swiglu [--quick]

Each term changes a row's Setup (``apply``) through fields every engine path already reads, so
no engine code changes and the presets' numbers stay where they are:

- ``swiglu``: SiLU-mul as a pass of its own, for an engine that does not fuse it into the GEMM's
  epilogue: read the gate and up projections' outputs, write their product (the MLP width one token
  passes through: the dense intermediate, or top-k x the expert width), at the fraction of HBM
  ``sim.presets.elementwise`` derives for the kernels between the GEMMs. The presets count the
  fused set only (add + RMSNorm + quantise, RoPE with the KV write, the attention output's
  quantisation: ``sim.presets.elementwise``), since TensorRT-LLM's MLPerf configs set
  ``gemm_swiglu_plugin``; this term scores the other reading.

(Earlier what-ifs, scored here and since moved into the presets: ``allreduce``, the measured
all-reduce table, now ``Setup.comm_curve``; ``elementwise``, the fused set above, now
``sim.presets.elementwise``.)
"""

from __future__ import annotations

from sim import presets
from sim.presets import elementwise

TERMS = ("swiglu",)


def swiglu_s_per_token(model_name: str, gpu_name: str, tp: int, weight_dtype: str, kv_dtype: str) -> float:
    """Seconds per computed token of the whole instance that a separate SwiGLU pass adds."""
    m = presets.model(model_name)
    key = presets.gpu_key(gpu_name)
    bw = presets.GPUS[key].bandwidth
    with_pass = elementwise.seconds_per_token(m, key, bw, tp, weight_dtype, kv_dtype, swiglu=True)
    return with_pass - elementwise.seconds_per_token(m, key, bw, tp, weight_dtype, kv_dtype)


def apply(setup, terms, model_name: str, gpu_name: str, tp: int, weight_dtype: str, kv_dtype: str):
    """``setup`` with the named what-if ``terms`` (``TERMS``) added."""
    unknown = set(terms) - set(TERMS)
    if unknown:
        raise ValueError(f"what-if terms must be among {TERMS}, got {sorted(unknown)}")
    if "swiglu" in terms:
        extra = swiglu_s_per_token(model_name, gpu_name, tp, weight_dtype, kv_dtype)
        setup = setup.replace(comm_s_per_token=setup.comm_s_per_token + extra)
    return setup
