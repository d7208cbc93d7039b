"""Loading and analysis speed against ``orjson.loads``, and the memory a load takes.

The targets ("load at the speed of the decoder"), measured in one process so that
both sides see the same machine load:

1. The shared ``v100_resnet50_train_num_workers_0`` trace: parsing it and
   computing every table the Report has, over ``orjson.loads`` of the same
   decompressed bytes (which only builds dicts and analyses nothing): target
   <= 0.5, and <= 1.0 over ``orjson.loads`` with the cyclic GC paused.
2. A generated trace of 1 million events with a realistic mix (nested cpu_ops,
   runtime launches, kernels with correlation ids, ac2g flows, memory events,
   ProfilerStep ranges): <= 1.0 over the GC-paused ``orjson.loads``; and the peak
   RSS rise while ``nbprofiler.load`` reads and parses the file, over the RSS
   before, as a multiple of the JSON size (target <= 2). That one runs in a fresh
   subprocess so the peak is the load's alone.

"Every table" is every table and ``cached_property`` of ``Report`` (the
``read_only_table`` ones included), found at run time, so tables added later are
timed too. Each figure is the best of ``--repeat`` runs, interleaved. Both ratios
are printed: over plain ``orjson.loads`` and over it with the cyclic GC paused
(nbprofiler's parser pauses it), the stricter comparison.

    .venv/bin/python bench/analysis_speed.py [--events 1000000] [--repeat 3]
"""
from __future__ import annotations

import argparse
import gc
import gzip
import json
import subprocess
import sys
import tempfile
import time
from functools import cached_property
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from nbprofiler.report.read_only import read_only_table  # noqa: E402
from nbprofiler.report.report import Report  # noqa: E402
from nbprofiler.trace.parser import parse_trace  # noqa: E402
from workload import RSS_PRELUDE  # noqa: E402 - bench/ is on sys.path when run as a script

SHARED_TRACE = ROOT / "tests" / "data" / "traces" / "v100_resnet50_train_num_workers_0.pt.trace.json.gz"
TABLES = [name for name, attr in vars(Report).items() if isinstance(attr, (cached_property, read_only_table))]


def timed(fn) -> float:
    gc.collect()
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def orjson_paused_gc(data: bytes) -> None:
    """``orjson.loads`` without the cyclic GC, which otherwise runs many times over its dicts."""
    gc.disable()
    try:
        orjson.loads(data)
    finally:
        gc.enable()


def analyse(data: bytes, source: str) -> dict[str, float]:
    """Parse and compute every table; seconds per stage."""
    stages: dict[str, float] = {}
    t0 = time.perf_counter()
    report = Report.from_trace(parse_trace(data, source), source)
    stages["parse"] = time.perf_counter() - t0
    for name in TABLES:
        t = time.perf_counter()
        getattr(report, name)
        stages[name] = time.perf_counter() - t
    return stages


def compare(data: bytes, source: str, repeat: int) -> tuple[float, float, float, dict[str, float]]:
    """(orjson s, orjson-without-GC s, our total s, the stages of our best run), each the
    best of ``repeat`` runs, interleaved so that a busy machine slows all sides alike."""
    plain, paused, best = [], [], None
    for _ in range(repeat):
        plain.append(timed(lambda: orjson.loads(data)))
        paused.append(timed(lambda: orjson_paused_gc(data)))
        gc.collect()
        stages = analyse(data, source)
        if best is None or sum(stages.values()) < sum(best.values()):
            best = stages
    assert best is not None
    return min(plain), min(paused), sum(best.values()), best


def report_ratio(targets: tuple[float | None, float], times: tuple[float, float, float, dict[str, float]]) -> None:
    """Both ratios with their targets: over plain ``orjson.loads`` (None: no target) and over it GC-paused."""
    plain, paused, ours, stages = times
    print(f"  orjson.loads {plain:.3f} s (GC paused: {paused:.3f} s); parse + every table {ours:.3f} s")
    plain_target = "" if targets[0] is None else f" (target <= {targets[0]})"
    print(f"  ratio {ours / plain:.2f}{plain_target}; against orjson with the GC paused {ours / paused:.2f} "
          f"(target <= {targets[1]})")
    print_stages(stages)


def print_stages(stages: dict[str, float]) -> None:
    slow = sorted(stages.items(), key=lambda kv: -kv[1])
    print("    " + ", ".join(f"{k} {v * 1e3:.0f} ms" for k, v in slow if v >= 0.0005))


# -- the generated trace -------------------------------------------------------------------
_OPS = [("aten::linear", "aten::addmm"), ("aten::conv2d", "aten::cudnn_convolution"),
        ("aten::relu", "aten::clamp_min"), ("aten::add", "aten::add_")]
_KERNELS = ["volta_sgemm_128x64_nn",
            "void implicit_convolve_sgemm<float, float, 128, 6, 7, 3, 3, 5, 1, false, true, true>",
            "void at::native::vectorized_elementwise_kernel<4, at::native::clamp_min_scalar_kernel_impl>",
            "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>"]


def synthetic_trace(path: Path, events: int) -> int:
    """Write a current-schema trace of about ``events`` events; return the exact count.

    Each layer is 7 events: an op, its inner op, the launch, the kernel, the
    flow start/end linking them, and a memory instant. Steps hold 500 layers and
    start with a DataLoader range; the GPU runs behind the host as on a real run.
    """
    layers_per_step = 500
    written = 0
    host_t, gpu_t = 1_700_000_000_000.125, 1_700_000_000_000.125
    corr = ext = 0
    allocated = 0
    with path.open("w") as fh:
        fh.write('{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "Synthetic GPU", "totalGlobalMem": '
                 '34359738368, "computeMajor": 8, "computeMinor": 0, "numSms": 108}], "traceEvents": [\n')
        step = 0
        first = True
        while written < events:
            step_start = host_t
            chunk: list[str] = []
            dl = 40.0 + step % 7
            chunk.append(f'{{"ph":"X","cat":"user_annotation","name":"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",'
                         f'"pid":100,"tid":100,"ts":{host_t:.3f},"dur":{dl:.3f},"args":{{"External id":{ext}}}}}')
            ext += 1
            host_t += dl + 1
            n = 1
            for layer in range(layers_per_step):
                outer, inner = _OPS[layer % 4]
                kernel = _KERNELS[layer % 4]
                corr += 1
                ext += 2
                kdur = 8.0 + (layer * 37 % 50)
                gpu_t = max(gpu_t + 1.5, host_t + 9)
                allocated += 4096 if layer % 2 else -4096
                chunk.append(
                    f'{{"ph":"X","cat":"cpu_op","name":"{outer}","pid":100,"tid":100,"ts":{host_t:.3f},"dur":18.250,'
                    f'"args":{{"External id":{ext - 1},"Sequence number":{layer},"Fwd thread id":0,'
                    '"Record function id":0}},\n'
                    f'{{"ph":"X","cat":"cpu_op","name":"{inner}","pid":100,"tid":100,"ts":{host_t + 1:.3f},'
                    f'"dur":15.500,"args":{{"External id":{ext},"Sequence number":{layer},"Fwd thread id":0,'
                    '"Record function id":0}},\n'
                    '{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":100,"tid":100,'
                    f'"ts":{host_t + 4:.3f},"dur":6.125,'
                    f'"args":{{"External id":{ext},"cbid":211,"correlation":{corr}}}}},\n'
                    f'{{"ph":"X","cat":"kernel","name":"{kernel}","pid":0,"tid":7,"ts":{gpu_t:.3f},"dur":{kdur:.3f},'
                    f'"args":{{"External id":{ext},"queued":0,"device":0,"context":1,"stream":7,"correlation":{corr},'
                    f'"registers per thread":64,"shared memory":0,"blocks per SM":{0.5 + layer % 9:.6f},'
                    '"warps per SM":8.0,"grid":[128,1,1],"block":[256,1,1],'
                    f'"est. achieved occupancy %":{layer % 100}}}}},\n'
                    f'{{"ph":"f","id":{corr},"pid":0,"tid":7,"ts":{gpu_t:.3f},"cat":"ac2g","name":"ac2g","bp":"e"}},\n'
                    f'{{"ph":"s","id":{corr},"pid":100,"tid":100,"ts":{host_t + 4:.3f},"cat":"ac2g","name":"ac2g"}},\n'
                    '{"ph":"i","cat":"cpu_instant_event","s":"t","name":"[memory]","pid":100,"tid":100,'
                    f'"ts":{host_t + 2:.3f},'
                    f'"args":{{"Total Reserved":67108864,"Total Allocated":{(1 << 24) + allocated},"Bytes":4096,'
                    f'"Addr":{139_000_000_000 + layer * 4096},"Device Type":1,"Device Id":0}}}}'
                )
                n += 7
                gpu_t += kdur
                host_t += 20
            chunk.append(f'{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{step}","pid":100,"tid":100,'
                         f'"ts":{step_start:.3f},"dur":{host_t - step_start:.3f},"args":{{"External id":{ext + 1}}}}}')
            ext += 2
            n += 1
            fh.write(("" if first else ",\n") + ",\n".join(chunk))
            first = False
            written += n
            host_t += 5
            step += 1
        fh.write('\n], "traceName": "synthetic"}\n')
    return written


_RSS_PROBE = r"""
import json, resource, sys
sys.path.insert(0, sys.argv[2])
import nbprofiler
from nbprofiler.report.load import load
""" + RSS_PRELUDE + r"""
before = status("VmRSS:")
report = load(sys.argv[1])
try:
    peak = status("VmHWM:")
except (OSError, KeyError):
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"before": before, "peak": peak, "events": len(report.table)}))
"""


def load_rss(path: Path) -> dict[str, int]:
    """Peak RSS of ``nbprofiler.load(path)`` in a fresh interpreter."""
    out = subprocess.run([sys.executable, "-c", _RSS_PROBE, str(path), str(ROOT)], check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="events in the generated trace")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the best counts")
    args = parser.parse_args()
    print(f"tables: {', '.join(TABLES)}")

    data = gzip.decompress(SHARED_TRACE.read_bytes())
    print(f"{SHARED_TRACE.name}: {len(data) / 1e6:.1f} MB JSON")
    report_ratio((0.5, 1.0), compare(data, str(SHARED_TRACE), args.repeat))
    del data

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "synthetic.pt.trace.json"
        count = synthetic_trace(path, args.events)
        size = path.stat().st_size
        rss = load_rss(path)  # before this process holds the big buffers
        rise = rss["peak"] - rss["before"]
        data = path.read_bytes()
        print(f"synthetic trace: {count} events, {size / 1e6:.0f} MB JSON ({rss['events']} kept)")
        report_ratio((None, 1.0), compare(data, str(path), args.repeat))
    print(f"  load peak RSS rise {rise / 1e6:.0f} MB over {rss['before'] / 1e6:.0f} MB before: "
          f"{rise / size:.2f}x the JSON size (target <= 2)")


if __name__ == "__main__":
    main()
