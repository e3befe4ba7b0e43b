"""A deployment profile: step-model terms fitted to one deployment's own benchmark runs.

    python -m sim calibrate results/*.json --model llama-3-8b --gpu h100-sxm --out my-h100.json
    setup = presets.instance("llama-3-8b", "h100-sxm", profile="my-h100.json")
    python -m sim plan ... --profile my-h100.json

``sim.calibrate`` writes it; ``presets.instance(..., profile=)`` reads it and puts its terms in
place of the preset's (keywords given to ``instance`` still win). A profile names the deployment
it was fitted on (model, GPU, tp, dtypes), and applying it to another one is an error: the terms
of one engine on one GPU at one tp say nothing about another.

The file is JSON::

    {"format": "sim-profile/1",
     "deployment": {"model": "llama-3-8b", "gpu": "h100-sxm", "tp": 1, "weight_dtype": "bf16", "kv_dtype": "bf16"},
     "terms": {"mfu": 0.52, "bandwidth": 2.9e12, "step_overhead": 0.0041},
     "preset": {...the preset's values of those terms...},
     "fit": {"files": [{"file": "...", "residuals": {...}}], "rms": 0.01}}
"""

from __future__ import annotations

import json
import math
from pathlib import Path

FORMAT = "sim-profile/1"
TERMS = ("mfu", "bandwidth", "step_overhead", "host_s_per_seq")   # the step-model terms a profile may set
DEPLOYMENT = ("model", "gpu", "tp", "weight_dtype", "kv_dtype")


def read_json(path, what: str = "it"):
    """The JSON in file ``path``; ValueError naming the file when it cannot be read or parsed."""
    where = str(path)
    try:
        return json.loads(Path(path).read_text())
    except OSError as e:
        raise ValueError(f"{where}: cannot read {what} ({e.strerror})") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{where}: not JSON ({e.msg} at line {e.lineno})") from None


def load(profile) -> dict:
    """A profile from a path or a dict, checked; ValueError naming the file and the field."""
    if isinstance(profile, dict):
        data, where = profile, "profile"
    else:
        where = str(profile)
        data = read_json(profile, "the profile")
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"{where}: field 'format' must be {FORMAT!r} (a profile written by python -m sim "
                         f"calibrate), got {data.get('format') if isinstance(data, dict) else type(data).__name__!r}")
    terms = data.get("terms")
    if not isinstance(terms, dict) or not terms:
        raise ValueError(f"{where}: field 'terms' must be an object with some of {TERMS}")
    for name, value in terms.items():
        if name not in TERMS:
            raise ValueError(f"{where}: field 'terms.{name}' is not a step-model term; allowed: {TERMS}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise ValueError(f"{where}: field 'terms.{name}' must be a number >= 0, got {value!r}")
    if "mfu" in terms and not 0 < terms["mfu"] <= 1:
        raise ValueError(f"{where}: field 'terms.mfu' must be in (0, 1], got {terms['mfu']!r}")
    if "bandwidth" in terms and terms["bandwidth"] <= 0:
        raise ValueError(f"{where}: field 'terms.bandwidth' must be > 0 (bytes/s), got {terms['bandwidth']!r}")
    deployment = data.get("deployment")
    if not isinstance(deployment, dict) or any(k not in deployment for k in DEPLOYMENT):
        raise ValueError(f"{where}: field 'deployment' must name {DEPLOYMENT}")
    return {**data, "_where": where}


def apply(profile, values: dict, deployment: dict) -> dict:
    """``values`` (Setup fields) with the profile's terms in place, after checking that the profile
    was fitted on ``deployment`` (model, gpu, tp, weight_dtype, kv_dtype as ``presets`` names them)."""
    data = load(profile)
    for key in DEPLOYMENT:
        if data["deployment"][key] != deployment[key]:
            raise ValueError(f"{data['_where']}: the profile was fitted on {key}={data['deployment'][key]!r}, "
                             f"not {key}={deployment[key]!r}: calibrate this deployment's own runs")
    return {**values, **{k: float(v) for k, v in data["terms"].items()}}


def save(path, deployment: dict, terms: dict, preset: dict, fit: dict) -> dict:
    """Write a profile (and return it as loaded)."""
    data = {"format": FORMAT, "deployment": dict(deployment), "terms": dict(terms), "preset": dict(preset),
            "fit": fit}
    Path(path).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return load(path)
