"""Public spec-sheet figures of the GPUs a trace names, for hardware-aware figures.

A trace says which GPU ran it (``deviceProperties``: ``DeviceInfo.name``) but
not what that GPU can do. The copy table compares a copy's rate with the host
link, and the FLOP/s figures (MFU) compare work with the peak: both need the
vendor's own figures, kept here with the data sheet each comes from.

Figures are per device as the runtime enumerates it: an AMD MI250/MI250X is two
GCDs, each its own device, so each gets half of the module's sheet figures.
FLOP/s are dense (not the 2:4 sparse figures NVIDIA sheets mark with ``*``: those
are halved here), and per dtype the highest dense rate the sheet gives: the
tensor (matrix) core rate where there is one (fp64 on A100/H100/H200/MI*),
else the vector rate; GeForce fp16/bf16/fp8 with FP32 accumulate, which is what
PyTorch's matmuls use. ``None``: the sheet gives no figure (no bf16 or tf32 on V100,
no fp8 before Hopper/Ada, no tf32 on MI250, no fp64 on the Ada and GeForce sheets).
Host link: the host interface per direction (PCIe 3.0 x16: 16 GB/s, 4.0: 32,
5.0: 64, half the sheets' bidirectional figure); SXM and OAM parts reach the
host over PCIe too.

A name that is not in the table is unknown: ``device_spec`` returns ``None`` and
the caller shows NaN. Never a nearest match: "AMD Radeon Graphics" (what ROCm 6
reports for an MI250 GCD, as the shared MI250 trace shows) names APUs and
desktop cards as well, so no figure fits it; nor does "AMD Instinct MI250X / MI250",
the marketing name some ROCm releases give both parts.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

DTYPES = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8")


@dataclass(frozen=True)
class DeviceSpec:
    """One GPU's spec-sheet figures: bandwidths in GB/s (1e9 B/s), peaks in TFLOP/s (dense)."""

    name: str
    memory_gb_per_s: float
    host_link: str  # e.g. "PCIe 4.0 x16"
    host_link_gb_per_s: float  # per direction
    fp64_tflops: float | None
    fp32_tflops: float | None
    tf32_tflops: float | None
    fp16_tflops: float | None
    bf16_tflops: float | None
    fp8_tflops: float | None
    source: str  # the data sheet the figures come from

    def peak_flops(self, dtype: str) -> float | None:
        """Dense peak FLOP/s for ``dtype`` (one of ``DTYPES``), or None where the sheet gives none."""
        if dtype not in DTYPES:
            raise ValueError(f"unknown dtype {dtype!r}: one of {', '.join(DTYPES)}")
        tflops: float | None = getattr(self, f"{dtype}_tflops")
        return None if tflops is None else tflops * 1e12


_PCIE3, _PCIE4, _PCIE5 = ("PCIe 3.0 x16", 16.0), ("PCIe 4.0 x16", 32.0), ("PCIe 5.0 x16", 64.0)


def _spec(name: str, source: str, memory: float, link: tuple[str, float], fp64: float | None, fp32: float | None,
          tf32: float | None, fp16: float | None, bf16: float | None, fp8: float | None) -> DeviceSpec:
    return DeviceSpec(name, memory, link[0], link[1], fp64, fp32, tf32, fp16, bf16, fp8, source)


_V100_SHEET = "NVIDIA V100 Tensor Core GPU data sheet (2020)"
_A100_SHEET = "NVIDIA A100 Tensor Core GPU data sheet (2021)"
_H100_SHEET = "NVIDIA H100 Tensor Core GPU data sheet (2023): tensor figures halved from sparse"
_H200_SHEET = "NVIDIA H200 Tensor Core GPU data sheet (2024): tensor figures halved from sparse"

# V100: fp16 is the Tensor Core (mixed precision) figure; the sheet has no bf16/tf32/fp8.
_V100_SXM2 = _spec("Tesla V100-SXM2", _V100_SHEET, 900, _PCIE3, 7.8, 15.7, None, 125, None, None)
_V100_PCIE = _spec("Tesla V100-PCIE", _V100_SHEET, 900, _PCIE3, 7.0, 14.0, None, 112, None, None)
# The DGX Station's V100s: the DGX Station data sheet gives 500 TFLOPS (mixed precision) for
# four of them, 125 each: the V100 SXM2's figures, same GPU at the same clocks, NVLink-connected.
_V100_DGXS = _spec("Tesla V100-DGXS", "NVIDIA DGX Station data sheet; per-GPU figures of the V100 SXM2 in "
                   + _V100_SHEET, 900, _PCIE3, 7.8, 15.7, None, 125, None, None)
# A100: fp64 is the FP64 Tensor Core figure (9.7 vector); 40GB parts run HBM2 at 1,555 GB/s.
_A100_40 = _spec("A100 40GB", _A100_SHEET, 1555, _PCIE4, 19.5, 19.5, 156, 312, 312, None)
_A100_80_SXM = _spec("A100-SXM4-80GB", _A100_SHEET, 2039, _PCIE4, 19.5, 19.5, 156, 312, 312, None)
_A100_80_PCIE = _spec("A100 80GB PCIe", _A100_SHEET, 1935, _PCIE4, 19.5, 19.5, 156, 312, 312, None)
# H100 / H200: fp64 Tensor Core 67 (34 vector) on SXM; sheet tensor figures are sparse, halved here.
_H100_SXM = _spec("H100 SXM5 80GB", _H100_SHEET, 3350, _PCIE5, 67, 67, 494.5, 989.5, 989.5, 1979)
_H100_PCIE = _spec("H100 PCIe", _H100_SHEET, 2000, _PCIE5, 51, 51, 378, 756.5, 756.5, 1513)
_H100_NVL = _spec("H100 NVL", _H100_SHEET, 3900, _PCIE5, 60, 60, 417.5, 835.5, 835.5, 1670.5)
_H200_SXM = _spec("H200 SXM", _H200_SHEET, 4800, _PCIE5, 67, 67, 494.5, 989.5, 989.5, 1979)
_H200_NVL = _spec("H200 NVL", _H200_SHEET, 4800, _PCIE5, 60, 60, 417.5, 835.5, 835.5, 1670.5)
# Ada data-centre cards: no fp64 figure on the sheets.
_L4 = _spec("L4", "NVIDIA L4 Tensor Core GPU data sheet (2023): tensor figures halved from sparse",
            300, _PCIE4, None, 30.3, 60, 121, 121, 242.5)
_L40S = _spec("L40S", "NVIDIA L40S data sheet (2023): dense figures as printed",
              864, _PCIE4, None, 91.6, 183, 362.05, 362.05, 733)
# GeForce: the architecture white papers' tables (FP32-accumulate tensor rates, dense).
_RTX_4090 = _spec("GeForce RTX 4090", "NVIDIA Ada GPU Architecture white paper, appendix table (RTX 4090)",
                  1008, _PCIE4, None, 82.6, 82.6, 165.2, 165.2, 330.3)
_RTX_3090 = _spec("GeForce RTX 3090", "NVIDIA Ampere GA102 GPU Architecture white paper, appendix table (RTX 3090)",
                  936, _PCIE4, None, 35.6, 35.6, 71, 71, None)
# AMD: matrix-core peaks; MI250/MI250X per GCD (half the OAM module's figures, 3.2768 TB/s per module).
_MI250X = _spec("Instinct MI250X (one GCD)", "AMD Instinct MI250X data sheet / amd.com specifications: module "
                "figures halved per GCD", 1638.4, _PCIE4, 47.85, 47.85, None, 191.5, 191.5, None)
_MI250 = _spec("Instinct MI250 (one GCD)", "AMD Instinct MI250 data sheet / amd.com specifications: module "
               "figures halved per GCD", 1638.4, _PCIE4, 45.25, 45.25, None, 181.05, 181.05, None)
_MI300X = _spec("Instinct MI300X", "AMD Instinct MI300X data sheet (2023): dense figures",
                5300, _PCIE5, 163.4, 163.4, 653.7, 1307.4, 1307.4, 2614.9)

# Device names as drivers report them (``nvidia-smi`` / ``torch.cuda.get_device_name`` /
# the trace's ``deviceProperties``), matched without case and without the vendor prefix,
# which older drivers leave out ("A100-SXM4-40GB"). Board names (PG509-200 / PG509-210) are
# those of the NVIDIA driver README's supported-GPU list, where they share the PCI device id of
# the A100-SXM4-40GB (20B0) and A100-SXM4-80GB (20B2): the shared A100 traces name PG509-200.
_BY_NAME: dict[str, DeviceSpec] = {
    "v100-sxm2-16gb": _V100_SXM2,
    "v100-sxm2-32gb": _V100_SXM2,
    "v100-pcie-16gb": _V100_PCIE,
    "v100-pcie-32gb": _V100_PCIE,
    "v100-dgxs-16gb": _V100_DGXS,
    "v100-dgxs-32gb": _V100_DGXS,
    "a100-sxm4-40gb": _A100_40,
    "a100-pcie-40gb": _A100_40,
    "a100-pg509-200": _A100_40,
    "a100-sxm4-80gb": _A100_80_SXM,
    "pg509-210": _A100_80_SXM,
    "a100 80gb pcie": _A100_80_PCIE,
    "h100 80gb hbm3": _H100_SXM,
    "h100 pcie": _H100_PCIE,
    "h100 nvl": _H100_NVL,
    "h200": _H200_SXM,
    "h200 nvl": _H200_NVL,
    "l4": _L4,
    "l40s": _L40S,
    "geforce rtx 4090": _RTX_4090,
    "geforce rtx 3090": _RTX_3090,
    "instinct mi250x": _MI250X,
    "instinct mi250": _MI250,
    "instinct mi300x": _MI300X,
}

_PREFIX = re.compile(r"^(nvidia|tesla|amd)\s+", re.I)


def _key(name: str) -> str:
    """The table's key for a reported name: lower case, single spaces, vendor words dropped."""
    key = " ".join(name.split()).lower()
    while (stripped := _PREFIX.sub("", key)) != key:
        key = stripped
    return key


def device_spec(name: str) -> DeviceSpec | None:
    """The spec-sheet figures of the GPU called ``name`` (``DeviceInfo.name``), or None
    when the name is not one the table knows: an unknown device gets no figures, not a guess."""
    return _BY_NAME.get(_key(name))
