"""The one registry of device presets, with the sources of their numbers.

* :data:`DEVICES`: single devices (:class:`mtpp.core.devices.DeviceSpec`) that price the
  ops of imported graphs and set a pipeline stage's bandwidth and memory
  (``mtpp import --device``, :func:`mtpp.from_onnx`, :func:`mtpp.plan_pipeline`);
* :data:`DEVICE_SETS`: heterogeneous machines (:class:`mtpp.placement.DeviceSet`) for
  placement (``mtpp place --devices``).

:func:`get_device` and :func:`get_devices` look a name up (or pass a spec through) and
name the presets on a typo.
"""

from __future__ import annotations

import math

from mtpp.core.device_sets import Device, DeviceModelError, DeviceSet
from mtpp.core.devices import DeviceSpec
from mtpp.core.errors import InvalidParameterError

GB = 1e9
GiB = 2**30

#: Single devices that price the ops of imported graphs.  Peak FLOP/s are dense (no sparsity) at the precision of
#: ``bytes_per_element``; link bandwidth is one direction of the link a stage uses
#: to reach the next.
DEVICES: dict[str, DeviceSpec] = {
    spec.name: spec
    for spec in (
        DeviceSpec(
            name="a100",
            peak_flops=312e12,
            mem_bandwidth=2039 * GB,
            link_bandwidth=300 * GB,
            memory=80 * GB,
            bytes_per_element=2,
            source="NVIDIA A100 80GB SXM datasheet (2021): 312 TFLOP/s dense BF16 tensor core, HBM2e 2,039 GB/s, "
            "NVLink 600 GB/s bidirectional = 300 GB/s each way, 80 GB",
        ),
        DeviceSpec(
            name="h100",
            peak_flops=989e12,
            mem_bandwidth=3350 * GB,
            link_bandwidth=450 * GB,
            memory=80 * GB,
            bytes_per_element=2,
            source="NVIDIA H100 SXM5 datasheet (2023): 989 TFLOP/s dense BF16 tensor core, HBM3 3.35 TB/s, "
            "NVLink 900 GB/s bidirectional = 450 GB/s each way, 80 GB",
        ),
        DeviceSpec(
            name="tpu-v4",
            peak_flops=275e12,
            mem_bandwidth=1200 * GB,
            link_bandwidth=50 * GB,
            memory=32 * GiB,
            bytes_per_element=2,
            source="Jouppi et al., TPU v4, ISCA 2023: 275 TFLOP/s BF16, 32 GiB HBM2 at 1,200 GB/s, "
            "ICI links of 50 GB/s (one link to the next stage)",
        ),
        DeviceSpec(
            name="cpu",
            peak_flops=4.1e12,
            mem_bandwidth=204.8 * GB,
            link_bandwidth=12.5 * GB,
            memory=256 * GiB,
            bytes_per_element=4,
            source="a 32-core AVX-512 server socket at 2.0 GHz: 32 x 2 FMA units x 16 FP32 lanes x 2 FLOP x 2e9 = "
            "4.1 TFLOP/s; 8 channels of DDR4-3200 = 204.8 GB/s; stages linked by 100 Gb/s Ethernet = 12.5 GB/s",
        ),
    )
}


def get_device(device: str | DeviceSpec) -> DeviceSpec:
    """A single-device preset by name (see :data:`DEVICES`) or the spec itself."""
    if isinstance(device, DeviceSpec):
        return device
    try:
        return DEVICES[device]
    except (KeyError, TypeError):
        raise InvalidParameterError(f"unknown device {device!r}; presets are {', '.join(DEVICES)}") from None


_PER_US = 1e-6  # bytes/s -> bytes/us

#: HSDAG's machine (Sec. 5, "Devices"): CPU = Intel Core i9-12900K, iGPU = Intel UHD
#: Graphics 770, dGPU = Intel Data Center GPU Flex 170, 64 GB host memory.  The
#: reference device (speed 1) is the CPU.  Speeds: HSDAG Table 2 measures GPU-only vs
#: CPU-only at 0.0160 / 0.00781 s = 2.05x (ResNet) and 0.00638 / 0.00277 s = 2.30x
#: (BERT), so the dGPU gets 2.0 by default, 2.3 on matrix products (ONNX MatMul/Gemm,
#: aten mm/addmm/bmm); Inception-V3 is only
#: 1.07x faster (0.0128 / 0.0120 s), many small ops, so concatenation and pooling get
#: 1.0.  HSDAG's Limitations call the iGPU "always slower than both CPU and dGPU":
#: it gets 0.5 (an assumption; no number is given).  Links: CPU <-> iGPU share DDR5
#: (dual channel DDR5-4800 = 76.8 GB/s, 2 us launch latency, assumed); anything <->
#: dGPU crosses PCIe 4.0 x16 (31.5 GB/s, 10 us latency, assumed).  Memory: the iGPU
#: shares the 64 GB of host memory (each device is given the whole 64 GB: the model
#: counts capacity per device); the Flex 170 has 16 GB GDDR6.
_TRIO = DeviceSet(
    name="cpu-igpu-dgpu",
    devices=(
        Device(name="cpu", speed=1.0, memory=64 * GB),
        Device(name="igpu", speed=0.5, memory=64 * GB),
        Device(
            name="dgpu",
            speed=2.0,
            op_speed={
                # ONNX op types, and the aten ops of graphs imported from PyTorch
                "MatMul": 2.3,
                "Gemm": 2.3,
                "mm.default": 2.3,
                "addmm.default": 2.3,
                "bmm.default": 2.3,
                "Concat": 1.0,
                "cat.default": 1.0,
                "MaxPool": 1.0,
                "AveragePool": 1.0,
            },
            memory=16 * GB,
        ),
    ),
    bandwidth=(
        (math.inf, 76.8 * GB * _PER_US, 31.5 * GB * _PER_US),
        (76.8 * GB * _PER_US, math.inf, 31.5 * GB * _PER_US),
        (31.5 * GB * _PER_US, 31.5 * GB * _PER_US, math.inf),
    ),
    latency=((0.0, 2.0, 10.0), (2.0, 0.0, 10.0), (10.0, 10.0, 0.0)),
    source="HSDAG Sec. 5 devices and Table 2 speed-ups; link figures are DDR5-4800 and PCIe 4.0 x16 datasheet rates",
)

#: REGAL's synthetic setting: two identical devices with a 16 GiB memory limit each
#: (App. A.2 gives 16 GiB as its example limit); the link is NVLink-class, 300 GB/s
#: each way, 5 us latency (assumed).
_TWO = DeviceSet.uniform(
    [Device(name="dev0", memory=16 * GiB), Device(name="dev1", memory=16 * GiB)],
    bandwidth=300 * GB * _PER_US,
    latency=5.0,
    name="two-devices",
    source="REGAL App. A.2 (16 GiB per device); NVLink-class link, assumed",
)

DEVICE_SETS: dict[str, DeviceSet] = {s.name: s for s in (_TRIO, _TWO)}


def get_devices(devices: str | DeviceSet) -> DeviceSet:
    """A device-set preset by name (see :data:`DEVICE_SETS`) or the set itself."""
    if isinstance(devices, DeviceSet):
        return devices
    try:
        return DEVICE_SETS[devices]
    except (KeyError, TypeError):
        raise DeviceModelError(f"unknown device preset {devices!r}; presets are {', '.join(DEVICE_SETS)}") from None
