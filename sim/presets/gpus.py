"""Accelerators: peak dense FLOP/s, HBM, and the GPU-to-GPU link, from the vendors' datasheets.

Figures are per GPU and *dense* (the datasheets' headline tensor numbers are "with sparsity", twice
these). ``interconnect`` is the vendor's per-GPU aggregate link bandwidth (both directions together,
bytes/s); one direction carries half of it. ``nvls``: the GPUs sit on NVSwitches that reduce in the
switch (NVLink SHARP, third-generation NVSwitch and later: HGX H100/H200, HGX B200). Both are
datasheet facts for the reader; the calibrated step model uses measured all-reduce times instead
(``sim.presets.efficiency``). The numbers were taken from the documents named in the
comments, from the author's knowledge of them (no network access while writing); check them against
the current datasheets before relying on them for a purchase.
"""

from __future__ import annotations

from dataclasses import dataclass

T = 1e12
GB = 1e9


@dataclass(frozen=True)
class GPU:
    name: str
    bf16_flops: float            # dense BF16 tensor FLOP/s
    fp8_flops: float | None      # dense FP8 tensor FLOP/s; None where the GPU has no FP8 tensor cores
    bandwidth: float             # memory bandwidth, bytes/s
    memory: float                # memory, bytes
    interconnect: float          # GPU-to-GPU bandwidth, bytes/s, both directions together
    source: str
    nvls: bool = False           # in-switch all-reduce (NVLink SHARP) available
    fp4_flops: float | None = None   # dense FP4 tensor FLOP/s (Blackwell); None elsewhere
    int8_flops: float | None = None  # dense INT8 tensor OP/s; None where not given

    def flops(self, dtype: str) -> float:
        """Dense tensor FLOP/s for matmuls on ``dtype`` tensor cores ("bf16", "fp16", "fp8", "int8"
        or "fp4"; see sim.presets.dtypes for which cores a weight format uses)."""
        if dtype == "int8":
            if self.int8_flops is None:
                raise ValueError(f"{self.name} has no INT8 tensor-core figure: use weight_dtype='bf16'")
            return self.int8_flops
        if dtype == "fp8":
            if self.fp8_flops is None:
                raise ValueError(f"{self.name} has no FP8 tensor cores: use weight_dtype='bf16'")
            return self.fp8_flops
        if dtype == "fp4":
            if self.fp4_flops is None:
                raise ValueError(f"{self.name} has no FP4 tensor cores: use weight_dtype='fp8' or 'bf16'")
            return self.fp4_flops
        return self.bf16_flops


GPUS = {
    # NVIDIA A100 Tensor Core GPU datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf),
    # A100 80GB SXM: BF16 312 TFLOPS dense (624 sparse), INT8 624 TOPS dense (1,248 sparse), no FP8,
    # HBM2e 2,039 GB/s, 80 GB, NVLink 600 GB/s.
    # INT8 on the other GPUs, dense: the datasheets give it equal to FP8 (H100/H200/GH200 3,958 TOPS
    # sparse, B200 9 POPS sparse, GB200 NVL72 720 POPS sparse per 72 GPUs, L40S 1,466 TOPS sparse,
    # MI300X/MI325X 2,614.9 TOPS dense).
    "a100-80gb": GPU("A100-80GB SXM", 312 * T, None, 2039 * GB, 80 * GB, 600 * GB,
                     "https://www.nvidia.com/en-us/data-center/a100/ (A100 datasheet)", int8_flops=624 * T),
    # NVIDIA H100 Tensor Core GPU datasheet, H100 SXM: BF16 1,979 TFLOPS and FP8 3,958 TFLOPS with
    # sparsity (989.5 / 1,979 dense), HBM3 3.35 TB/s, 80 GB, NVLink 900 GB/s.
    "h100-sxm": GPU("H100 SXM", 989.5 * T, 1979 * T, 3.35e12, 80 * GB, 900 * GB,
                    "https://www.nvidia.com/en-us/data-center/h100/ (H100 datasheet)", nvls=True,
                    int8_flops=1979 * T),
    # NVIDIA H200 Tensor Core GPU datasheet, H200 SXM: same tensor cores as H100 SXM (BF16 989.5,
    # FP8 1,979 TFLOPS dense), HBM3e 141 GB at 4.8 TB/s, NVLink 900 GB/s.
    "h200": GPU("H200 SXM", 989.5 * T, 1979 * T, 4.8e12, 141 * GB, 900 * GB,
                "https://www.nvidia.com/en-us/data-center/h200/ (H200 datasheet)", nvls=True,
                int8_flops=1979 * T),
    # NVIDIA HGX B200 / DGX B200 specifications, per GPU: FP8 9 PFLOPS and BF16 4.5 PFLOPS with
    # sparsity (4.5 / 2.25 dense), 180 GB HBM3e (1,440 GB per 8-GPU DGX B200) at 8 TB/s,
    # fifth-generation NVLink 1.8 TB/s.
    "b200": GPU("B200 SXM", 2250 * T, 4500 * T, 8e12, 180 * GB, 1800 * GB,
                "https://www.nvidia.com/en-us/data-center/hgx/ and https://www.nvidia.com/en-us/data-center/dgx-b200/",
                nvls=True, fp4_flops=9000 * T, int8_flops=4500 * T),
    # NVIDIA GB200 NVL72 specifications, per GPU (the rack's figures / 72): FP4 20 PF, FP8 10 PF,
    # BF16 5 PF with sparsity (10 / 5 / 2.5 PF dense), 186 GB HBM3e at 8 TB/s, NVLink 1.8 TB/s.
    "gb200": GPU("GB200 (NVL72)", 2500 * T, 5000 * T, 8e12, 186 * GB, 1800 * GB,
                 "https://www.nvidia.com/en-us/data-center/gb200-nvl72/ (GB200 NVL72 specifications)",
                 nvls=True, fp4_flops=10000 * T, int8_flops=5000 * T),
    # NVIDIA GH200 Grace Hopper Superchip datasheet: the H100's tensor cores (989.5 BF16 / 1,979 FP8
    # TFLOPS dense), 96 GB HBM3 at 4 TB/s (the first version), NVLink 900 GB/s.
    "gh200": GPU("GH200 (96 GB)", 989.5 * T, 1979 * T, 4.0e12, 96 * GB, 900 * GB,
                 "https://www.nvidia.com/en-us/data-center/grace-hopper-superchip/ (GH200 datasheet)",
                 int8_flops=1979 * T),
    # NVIDIA L40S datasheet: BF16 362.05 TFLOPS and FP8 733 TFLOPS dense (733 / 1,466 with
    # sparsity), 48 GB GDDR6 at 864 GB/s, no NVLink: PCIe Gen4 x16, 64 GB/s both directions.
    "l40s": GPU("L40S", 362.05 * T, 733 * T, 864 * GB, 48 * GB, 64 * GB,
                "https://www.nvidia.com/en-us/data-center/l40s/ (L40S datasheet)", int8_flops=733 * T),
    # AMD Instinct MI300X data sheet: BF16 1,307.4 TFLOPS and FP8 2,614.9 TFLOPS dense, 192 GB HBM3
    # at 5.3 TB/s, Infinity Fabric 896 GB/s aggregate peak per GPU (7 links x 128 GB/s).
    "mi300x": GPU("MI300X", 1307.4 * T, 2614.9 * T, 5.3e12, 192 * GB, 896 * GB,
                  "https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html (MI300X data sheet)",
                  int8_flops=2614.9 * T),
    # AMD Instinct MI325X data sheet: the MI300X's compute (1,307.4 BF16 / 2,614.9 FP8 TFLOPS dense),
    # 256 GB HBM3E at 6 TB/s, the same Infinity Fabric links.
    "mi325x": GPU("MI325X", 1307.4 * T, 2614.9 * T, 6.0e12, 256 * GB, 896 * GB,
                  "https://www.amd.com/en/products/accelerators/instinct/mi300/mi325x.html (MI325X data sheet)",
                  int8_flops=2614.9 * T),
}
