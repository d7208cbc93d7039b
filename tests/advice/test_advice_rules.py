"""report.suggestions: each rule fires on a workload built to trigger it, and not on one built not to.

Live CPU runs (real training loops) cover the DataLoader, CPU batch-size and memory-growth
rules; the shared GPU traces cover the GPU rules. Where a GPU rule needs live CUDA memory
counters, which no trace has, a real trace's table is paired with a run record holding those
counters, so the rule still reads real kernels.
"""
from __future__ import annotations

import ast
import json
import time

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import BatchSampler, DataLoader, Dataset, SequentialSampler, TensorDataset

import nbprofiler
from conftest import TRACE_FILES, shared_trace
from workloads import SlowDataset
from nbprofiler.advice import measures
from nbprofiler.advice import thresholds as T
from nbprofiler.advice.loader_code import Expr, LoaderArgs, args_from_record, dataloader_call
from nbprofiler.advice.dataloader_plan import Cores, Waiting, measure_waiting, plan
from nbprofiler.advice.rules import RULES, nothing_to_improve, suggest, verdicts
from nbprofiler.advice.rules.facts import Facts
from nbprofiler.advice.suggestion import NOTHING_TO_IMPROVE, Suggestion, Verdict
from nbprofiler.notebook.profile import live_run
from nbprofiler.records import LoaderRecord, RunRecord
from nbprofiler.options import ProfileOptions
from nbprofiler.report import Report
from nbprofiler.trace.table import DeviceInfo


def kinds(suggestions) -> list[str]:
    return [s.kind for s in suggestions]


def only(suggestions, kind: str) -> Suggestion:
    found = [s for s in suggestions if s.kind == kind]
    assert len(found) == 1, kinds(suggestions)
    return found[0]


# -- the shared GPU traces -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def traces() -> dict[str, Report]:
    names = ["v100_resnet50_train_num_workers_0", "v100_resnet50_train_num_workers_4", "v100_resnet_ns_timestamps",
             "a100_train", "a100_nccl_distributed", "a100_alexnet_small", "mi250_rocm_toy_train", "cpu_only"]
    return {n: nbprofiler.load(shared_trace(f"{n}.pt.trace.json.gz")) for n in names}


def test_num_workers_0_trace_gets_a_dataloader_suggestion(traces):
    s = only(traces["v100_resnet50_train_num_workers_0"].suggestions, "dataloader")
    share = s.evidence["wait_share"]
    assert 0.30 < share < 0.37  # the breakdown's DataLoader time: ~59 ms of a ~178 ms step
    assert s.gain == pytest.approx(1 / (1 - share), rel=0.01)
    assert f"1/(1-{share:.2f})" in s.expected_gain
    assert s.evidence["num_workers"].startswith("0 (the trace shows _SingleProcessDataLoaderIter")
    # No loader record in a trace: generic code, with what the trace shows marked as changed.
    assert "num_workers=min(8, max(1, cores - 1)),  # changed: was 0" in s.code
    assert "persistent_workers=True,  # changed" in s.code
    assert "pin_memory=True,  # changed: was False" in s.code  # the trace's copies are pageable
    assert "non_blocking=True" in s.code
    ast.parse(s.code)


@pytest.mark.parametrize("cores, workers", [(2, 1), (4, 3), (16, 8)])
def test_a_traces_workers_are_those_its_machine_allows(traces, monkeypatch, cores, workers):
    """The trace does not say how many cores recorded it: the code counts them where it runs."""
    s = only(traces["v100_resnet50_train_num_workers_0"].suggestions, "dataloader")
    assert "usable_cpus" not in s.evidence  # nothing of this notebook's machine
    assert "cores less 1 for the main process, up to 8 workers" in s.detail
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(cores)))
    loader_code = s.code.split("# in the training loop")[0]
    namespace = {"DataLoader": DataLoader, "dataset": TensorDataset(torch.zeros(4, 1)), "batch_size": 2}
    exec(loader_code, namespace)
    assert namespace["loader"].num_workers == workers and namespace["loader"].persistent_workers


def test_a_traces_suggestion_does_not_depend_on_this_machines_cores(monkeypatch):
    """Loaded on a 2-core and a 16-core notebook machine, the V100 trace gets the same advice."""
    def advice(cores: int) -> Suggestion:
        monkeypatch.setattr("nbprofiler.machine.process_cpus", lambda: cores)
        monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(cores)))
        monkeypatch.setattr("os.cpu_count", lambda: cores)
        return only(nbprofiler.load(shared_trace("v100_resnet50_train_num_workers_0.pt.trace.json.gz")).suggestions,
                    "dataloader")

    assert advice(2) == advice(16)


def test_num_workers_4_trace_gets_no_dataloader_suggestion(traces):
    report = traces["v100_resnet50_train_num_workers_4"]
    assert measures.data_wait(report).share < T.DATALOADER_WAIT_SHARE
    assert "dataloader" not in kinds(report.suggestions)


@pytest.mark.parametrize("name", ["v100_resnet50_train_num_workers_0", "v100_resnet50_train_num_workers_4"])
def test_both_v100_traces_get_the_amp_suggestion(traces, name):
    s = only(traces[name].suggestions, "amp")
    assert s.evidence["compute_capability"] == "7.0" and s.evidence["tensor_core_share"] == 0
    assert "torch.autocast(device_type=\"cuda\", dtype=torch.float16)" in s.code
    assert "GradScaler" in s.code  # fp16 on Volta: no bf16, loss scaling needed
    e = s.evidence["eligible_step_share"]
    # An estimate: the typical tensor-core speed-up is no maximum (a V100's peak is 8x fp32's).
    assert s.claim == "estimate" and "estimate" in s.expected_gain
    assert s.gain == pytest.approx(1 / (1 - e * (1 - 1 / T.TENSOR_CORE_SPEEDUP_TYPICAL)), rel=1e-3)
    assert s.gain_low == 1.0 and s.gain_high >= 1 / (1 - e * (1 - 1 / T.TENSOR_CORE_SPEEDUP_MAX_BEFORE_BF16))
    ast.parse(s.code)


def test_amp_uses_bf16_from_compute_capability_8(traces):
    """The V100's fp32 kernels on a device that reports compute capability 8.0."""
    v100 = traces["v100_resnet50_train_num_workers_4"]
    a100 = DeviceInfo(index=0, name="A100", kind="cuda", total_memory_bytes=40 * 2**30, compute_capability=(8, 0))
    steps = v100.steps[["step", "phase", "wall_ms", "dataloader_ms"]]
    report = Report.from_live(v100.table, _record(a100, steps), None)
    s = only(report.suggestions, "amp")
    assert "dtype=torch.bfloat16" in s.code and "GradScaler" not in s.code


def test_suggestions_are_ordered_by_gain(traces):
    for report in traces.values():
        gains = [s.gain for s in report.suggestions]
        assert gains == sorted(gains, reverse=True)


def test_every_suggestion_is_plain_json(traces):
    for report in traces.values():
        for s in report.suggestions:
            json.dumps(s.as_dict())
            assert s.severity in ("high", "medium", "low") and s.title and s.expected_gain


def test_report_suggestions_is_cached(traces):
    report = traces["v100_resnet50_train_num_workers_4"]
    assert report.suggestions is report.suggestions
    assert isinstance(report.suggestions, tuple)


def test_sync_rule_fires_on_item_calls_and_names_them(traces):
    s = only(traces["a100_train"].suggestions, "sync")
    assert s.evidence["idle_share"] >= T.SYNC_IDLE_SHARE
    assert any("`.item()`" in p and "aten::item" in p for p in s.evidence["places"])
    points = measures.sync_points(traces["a100_train"])
    assert {"item", "cpu"} <= set(points["cause"])


def test_sync_rule_quiet_when_syncs_cost_little(traces):
    """The V100 runs sync only on their input copies, and the GPU barely idles after them."""
    for name in ("v100_resnet50_train_num_workers_0", "v100_resnet50_train_num_workers_4"):
        report = traces[name]
        points = measures.sync_points(report)
        assert set(points["cause"]) == {"h2d"}
        assert points["where"].eq("resnet50_profiler_api.py(44): <module>").all()  # the 2021 call stack
        assert "sync" not in kinds(report.suggestions)


def test_launch_bound_rule(traces):
    s = only(traces["a100_nccl_distributed"].suggestions, "launch_bound")
    assert s.evidence["host_wait_share"] > T.LAUNCH_IDLE_SHARE and "torch.compile" in s.code
    for name in ("v100_resnet_ns_timestamps", "v100_resnet50_train_num_workers_4"):  # GPU kept busy
        assert "launch_bound" not in kinds(traces[name].suggestions)


def test_conv_rule(traces):
    s = only(traces["v100_resnet_ns_timestamps"].suggestions, "conv")
    assert "cudnn.benchmark = True" in s.code and "channels_last" in s.code
    assert s.evidence["conv_step_share"] >= T.CONV_MIN_SHARE
    assert "conv" not in kinds(traces["a100_train"].suggestions)  # no convolutions at all


def test_a_single_profiled_step_is_not_judged_by_its_idle_time(traces):
    """The MI250 toy run's one step is mostly start-up: the GPU is idle 98% of it."""
    report = traces["mi250_rocm_toy_train"]
    assert measures.device_time(report).utilization < 0.05
    assert kinds(report.suggestions) == [NOTHING_TO_IMPROVE]
    s = report.suggestions[0]
    # Two steps were profiled; the breakdown keeps one, and the result says so rather than "every check passed".
    assert "every check passed" not in s.title and "could not run" in s.title
    assert "GPU idle time and batch size (only 1 of the 2 profiled steps is in the breakdown" in s.detail
    assert "no host-device sync leaves the GPU idle" in s.detail.split("Could not check")[0]
    assert "CUDA devices only, not ROCM" in s.detail


def test_a_trace_without_steps_says_which_checks_could_not_run(traces):
    s = only(traces["a100_alexnet_small"].suggestions, NOTHING_TO_IMPROVE)
    assert "every check passed" not in s.title
    passed, not_run = s.detail.split("Could not check:")
    assert "matmul/conv kernels on fp32 data take" in passed and "fp32 matmul kernels on the fp32 units" in passed
    assert "host-device syncs (the trace has no ProfilerStep ranges" in not_run
    assert "GPU idle time and batch size (the trace has no ProfilerStep ranges" in not_run


@pytest.mark.parametrize("name", ["a100_alexnet_small", "mi250_rocm_toy_train", "cpu_only"])
def test_no_dataloader_is_never_said_to_keep_up(traces, name):
    s = only(traces[name].suggestions, NOTHING_TO_IMPROVE)
    assert "DataLoader keeps up" not in s.detail and "data_wait_share" not in s.evidence
    assert "data loading (no DataLoader was seen in the profiled steps)" in s.detail


def test_trace_where_no_check_could_run_does_not_claim_nothing_to_improve(traces):
    result = traces["cpu_only"].suggestions
    assert kinds(result) == [NOTHING_TO_IMPROVE]
    assert result[0].title == "No suggestion, but no check could run on this profile"
    assert "Passed" not in result[0].detail and "the CPU batch size" in result[0].detail
    assert result[0].gain == 1.0 and result[0].code is None


# -- verdicts: "nothing to improve" vouches only for checks that ran ------------------------------
def assert_passed_means_ran_and_did_not_fire(report: Report) -> list[Verdict]:
    """Each rule's verdicts, checked against what "nothing to improve" lists as passed."""
    facts = Facts(report)
    by_rule = {rule.__name__: rule(facts) for rule in RULES}
    for name, found in by_rule.items():
        states = {v.state for v in found}
        assert not {"fired", "passed"} <= states, (name, found)  # a rule that fired passed nothing
        assert all(bool(v.suggestions) == (v.state == "fired") for v in found), name
    checked = [v for found in by_rule.values() for v in found]
    assert [v.check for v in checked] == [v.check for v in verdicts(report)]
    listed = nothing_to_improve(checked).detail
    passed_part = listed.split("Could not check:")[0]
    ran = [v.figures for v in checked if v.state == "passed"]
    assert passed_part.strip() == (f"Passed: {'; '.join(dict.fromkeys(ran))}." if ran else "")
    for v in checked:
        if v.state == "not_run":
            assert f"{v.check} ({v.reason})" in listed.split("Could not check:")[1]
    fired = [s.kind for v in checked for s in v.suggestions]
    assert sorted(fired) == sorted(kinds(report.suggestions)) if fired else \
        kinds(report.suggestions) == [NOTHING_TO_IMPROVE]
    return checked


@pytest.mark.parametrize("name", [n.split(".")[0] for n in TRACE_FILES])
def test_every_trace_lists_as_passed_only_checks_that_ran_and_did_not_fire(traces, name):
    assert_passed_means_ran_and_did_not_fire(traces[name])


def test_a_check_that_fired_is_never_listed_as_passed(traces):
    """a100_train's syncs fire: what "nothing to improve" would say of that run leaves them out."""
    checked = assert_passed_means_ran_and_did_not_fire(traces["a100_train"])
    (syncs,) = [v for v in checked if v.check == "host-device syncs"]
    assert syncs.state == "fired" and [s.kind for s in syncs.suggestions] == ["sync"]
    assert "no host-device sync" not in nothing_to_improve(checked).detail


def test_a_check_whose_precondition_fails_is_not_run_with_its_reason(traces):
    """Without ProfilerStep ranges there are no steps to judge syncs or idle time in."""
    checked = verdicts(traces["a100_alexnet_small"])
    by_check = {v.check: v for v in checked if v.state != "passed"}
    for check in ("host-device syncs", "GPU idle time and batch size"):
        assert by_check[check].state == "not_run" and not by_check[check].suggestions
        assert by_check[check].reason == "the trace has no ProfilerStep ranges, so there are no steps to judge"
    # The MI250's single breakdown step: the idle-time rule did not run, the sync rule did and passed.
    mi250 = {(v.check, v.state): v for v in verdicts(traces["mi250_rocm_toy_train"])}
    assert mi250[("GPU idle time and batch size", "not_run")].reason.startswith(
        "only 1 of the 2 profiled steps is in the breakdown")
    assert ("host-device syncs", "passed") in mi250
    # GPU checks do not apply to a CPU run, nor the CPU batch check to a GPU run: no verdict at all.
    assert {v.check for v in verdicts(traces["cpu_only"])} == {"data loading", "the CPU batch size",
                                                              "many small operators on CPU", "memory growth"}
    assert not {"the CPU batch size", "many small operators on CPU"} & {v.check for v in verdicts(traces["a100_train"])}


def test_a_live_cpu_run_lists_as_passed_only_checks_that_ran(one_torch_thread):
    ds = TensorDataset(torch.randn(64 * 16, 32), torch.randint(0, 4, (64 * 16,)))
    report = _train({"train_ds": ds, "train_loader": DataLoader(ds, batch_size=64, shuffle=True)}, _mlp(32))
    checked = assert_passed_means_ran_and_did_not_fire(report)
    assert {v.state for v in checked if v.check == "data loading"} == {"fired"}  # per-sample indexing
    assert any(v.state == "passed" for v in checked if v.check == "memory growth")  # 3 profiled steps judged


def test_a_verdict_carries_what_its_state_needs():
    with pytest.raises(ValueError, match="passed"):
        Verdict("data loading", "passed")
    with pytest.raises(ValueError, match="fired"):
        Verdict("data loading", "fired", figures="waiting 1%")


# -- the DataLoader plan: decisions from figures, without words ----------------------------------------
def _waiting(wait_ms: float, step_ms: float = 40.0, n: int = 8) -> Waiting:
    return measure_waiting(measures.DataWait(n, step_ms, wait_ms), step_ms - wait_ms, np.full(n, wait_ms))


def test_plan_indexes_a_tensor_dataset_in_whole_batches():
    record = _cpu_loader(20.0)
    record.dataset_type = "TensorDataset"
    p = plan(_waiting(20.0), record, 0, Cores(8, 1, 1), pin=False)
    assert p is not None and p.sampler == "RandomSampler" and p.num_workers is None
    assert p.loaded_wait == 0.0 and p.gain == pytest.approx(2.0)  # all waiting goes: 40 ms -> 20 ms


def test_plan_adds_workers_within_the_cores_and_keeps_them():
    p = plan(_waiting(30.0), _cpu_loader(30.0), 0, Cores(4, 1, 1), pin=False)
    # 30 ms to load a batch against 10 ms of compute: 4 workers needed, 3 cores to spare.
    assert p is not None and (p.load_ms, p.num_workers, p.cores.spare, p.split) == (30.0, 3, 3, None)
    assert p.persistent and not p.prefetch and p.new_wait == 0.0
    assert plan(_waiting(1.0), _cpu_loader(1.0), 0, Cores(4, 1, 1), pin=False) is None  # under 5%: it keeps up


def test_plan_for_a_trace_with_unknown_workers_uses_the_cores():
    p = plan(_waiting(20.0), None, None, None, pin=True)
    assert p is not None and p.all_cores and p.num_workers is None and p.pin and p.persistent
    assert p.trace_workers == T.TRACE_MAX_WORKERS


# -- GPU memory rules: a real trace's kernels with live-style CUDA memory counters --------------------
def _record(device: DeviceInfo, steps: pd.DataFrame, loaders: tuple[LoaderRecord, ...] = ()) -> RunRecord:
    return RunRecord(options=ProfileOptions(), device=device, steps=steps.reset_index(drop=True), loaders=loaders,
                     step_source="optimizer", cpu_count=8)


def _loader_record(batch_size: int) -> LoaderRecord:
    return LoaderRecord(loader_id=1, batch_size=batch_size, num_workers=4, pin_memory=True, persistent_workers=True,
                        prefetch_factor=2, drop_last=False, shuffle=True, dataset_type="ImageFolder",
                        dataset_length=100_000, dataset_repr="ImageFolder", name="train_loader",
                        dataset_name="train_ds", batches=12)


def _cuda_run(traces, static_gb: float, peak_gb: float) -> Report:
    """a100_nccl_distributed's kernels (GPU busy 24% of the step), with memory counters."""
    trace = traces["a100_nccl_distributed"]
    device = DeviceInfo(index=0, name="NVIDIA A100", kind="cuda", total_memory_bytes=40 * 2**30,
                        compute_capability=(8, 0))
    n = 8
    steps = pd.DataFrame({"step": range(n), "phase": "active", "wall_ms": 220.0, "dataloader_ms": 0.0,
                          "mem_allocated_bytes": static_gb * 2**30, "mem_peak_bytes": peak_gb * 2**30,
                          "mem_reserved_bytes": peak_gb * 2**30})
    return Report.from_live(trace.table, _record(device, steps, (_loader_record(32),)), None)


def test_low_utilization_with_headroom_suggests_the_largest_batch_that_fits(traces):
    report = _cuda_run(traces, static_gb=2.0, peak_gb=6.0)  # 4 GiB of activations for 32 samples
    s = only(report.suggestions, "batch_size")
    # 0.85 * 40 GiB - 2 GiB = 32 GiB of room; 128 MiB per sample -> 256 samples, the largest power of two.
    assert "batch_size=256,  # changed: was 32" in s.code
    assert s.evidence["activation_bytes_per_sample"] == pytest.approx(2**30 / 8)
    assert s.gain == pytest.approx(min(1 / s.evidence["gpu_utilization"], 8.0), rel=1e-3)
    # An extrapolation, not a bound: up to the batch's 8x where the GPU's per-sample time falls.
    assert s.claim == "estimate" and s.gain_range == (1.0, 8.0) and "assuming" in s.expected_gain
    assert "memory_near_limit" not in kinds(report.suggestions)


def test_peak_near_the_limit_suggests_accumulation_not_a_larger_batch(traces):
    report = _cuda_run(traces, static_gb=10.0, peak_gb=38.0)  # 95% of 40 GiB
    s = only(report.suggestions, "memory_near_limit")
    assert s.severity == "high" and s.gain == 1.0
    # No cell recorded: the loop's edits in comments (tests/advice/test_suggestion_code.py pastes them into a cell).
    assert "batch_size=16,  # changed: was 32" in s.code and "(loss / 2).backward()" in s.code
    assert "checkpoint" in s.code
    assert "batch_size" not in kinds(report.suggestions)


def test_no_batch_size_advice_without_headroom_or_idle_gpu(traces):
    busy = traces["v100_resnet_ns_timestamps"]  # GPU 97% busy
    device = DeviceInfo(index=0, name="V100", kind="cuda", total_memory_bytes=32 * 2**30, compute_capability=(7, 0))
    steps = pd.DataFrame({"step": range(5), "phase": "active", "wall_ms": 96.0, "dataloader_ms": 0.0,
                          "mem_allocated_bytes": 2.0 * 2**30, "mem_peak_bytes": 6.0 * 2**30,
                          "mem_reserved_bytes": 6.0 * 2**30})
    report = Report.from_live(busy.table, _record(device, steps, (_loader_record(32),)), None)
    assert not {"batch_size", "memory_near_limit"} & set(kinds(report.suggestions))


# -- DataLoader: thresholds on measured steps ---------------------------------------------------------
def _cpu_steps(wait_share: float, n: int = 12, wall_ms: float = 40.0) -> pd.DataFrame:
    return pd.DataFrame({"step": range(n), "phase": "active", "wall_ms": wall_ms,
                         "dataloader_ms": wall_ms * wait_share, "rss_bytes": 1e9})


def _cpu_loader(wait_ms: float, n: int = 12) -> LoaderRecord:
    record = _loader_record(64)
    record.num_workers, record.pin_memory, record.persistent_workers, record.prefetch_factor = 0, False, False, None
    record.wait_ms_by_step = {i: wait_ms for i in range(n)}
    record.wait_cpu_ms = wait_ms * n  # the loop's thread computed all the time it loaded
    return record


@pytest.mark.parametrize("share, fires", [(0.04, False), (0.049, False), (0.06, False), (0.08, False), (0.1, True),
                                          (0.5, True)])
def test_dataloader_threshold(share, fires):
    """Waiting under 5% of the step keeps up; from 5% to 9% all of it gone would give under 1.10x,
    within a loop's run-to-run noise, so the check passes and says so; from there a change is proposed."""
    cpu = DeviceInfo(index=-1, name="CPU", kind="cpu", total_memory_bytes=16 * 2**30)
    record = _record(cpu, _cpu_steps(share), (_cpu_loader(40.0 * share),))
    report = Report.from_live(None, record, None)
    assert ("dataloader" in kinds(suggest(report))) is fires
    (check,) = [v for v in verdicts(report) if v.check == "data loading"]
    assert check.state == ("fired" if fires else "passed")
    assert ("within a loop's run-to-run noise" in check.figures) is (0.05 < share < 0.09)


def _workers_loader(waits: list[float], prefetch_factor: int) -> tuple[pd.DataFrame, LoaderRecord]:
    """A CPU run whose loader has two workers and waits ``waits`` ms in each 40 ms step."""
    steps = pd.DataFrame({"step": range(len(waits)), "phase": "active", "wall_ms": 40.0, "dataloader_ms": waits,
                          "rss_bytes": 1e9})
    record = _loader_record(64)
    record.num_workers, record.pin_memory, record.prefetch_factor = 2, False, prefetch_factor
    record.wait_ms_by_step = dict(enumerate(waits))
    return steps, record


# Most steps wait 2 ms and some 7.9 ms: a median under half the mean, and no step long enough
# (4x the median) to count as a worker start-up. The steady loader waits the same on average.
BURSTY = [2.0] * 7 + [7.9] * 5
STEADY = [sum(BURSTY) / len(BURSTY)] * len(BURSTY)


@pytest.mark.parametrize("waits, prefetch_factor, fires", [(BURSTY, 2, True), (STEADY, 2, False), (BURSTY, 4, False)])
def test_prefetch_factor_only_for_bursty_waiting_below_the_suggested_depth(waits, prefetch_factor, fires):
    cpu = DeviceInfo(index=-1, name="CPU", kind="cpu", total_memory_bytes=16 * 2**30)
    steps, record = _workers_loader(waits, prefetch_factor)
    s = only(suggest(Report.from_live(None, _record(cpu, steps, (record,)), None)), "dataloader")
    assert s.evidence["wait_share"] > T.DATALOADER_WAIT_SHARE  # the loader is slow either way
    assert ("prefetch_factor" in s.evidence["changed"]) is fires
    assert (f"prefetch_factor={T.PREFETCH_SUGGESTED},  # changed: was {prefetch_factor}" in s.code) is fires
    assert ("waiting is bursty (median 2.00 ms" in s.detail) is fires


# -- live CPU runs ----------------------------------------------------------------------------------------
def _train(namespace: dict, model: nn.Module, epochs: int = 1, hold: bool = False, **options) -> Report:
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    kept = []
    with live_run(ProfileOptions(**options), namespace=namespace) as run:
        for _ in range(epochs):
            for x, y in namespace["train_loader"]:
                loss = F.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                if hold:  # a validation loss kept with its graph: the classic leak
                    kept.append(F.cross_entropy(model(x), y))
    return run.report


def _mlp(width: int, inputs: int = 32) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(inputs, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 4))




def test_slow_loader_gets_a_dataloader_suggestion_with_the_users_names(one_torch_thread):
    ds = SlowDataset(16 * 10, delay=0.002, compute=True)
    ns = {"train_ds": ds, "train_loader": DataLoader(ds, batch_size=16, shuffle=True)}
    report = _train(ns, _mlp(256))
    s = only(report.suggestions, "dataloader")
    assert s.evidence["wait_share"] > 0.5 and s.evidence["loader"] == "train_loader"
    assert s.code.startswith("train_loader = DataLoader(\n    train_ds,\n    batch_size=16,\n    shuffle=True,\n")
    assert "num_workers=" in s.code and "# changed: was 0" in s.code
    assert "persistent_workers=True,  # changed: was False" in s.code
    assert "pin_memory" not in s.code  # no GPU: nothing to pin for
    cpus, ranks = s.evidence["usable_cpus"], s.evidence["local_ranks"]
    assert s.evidence["usable_cpus"] == report.run.cpu_count and ranks == 1
    workers = int(s.code.split("num_workers=")[1].split(",")[0])
    assert 1 <= workers <= max(1, cpus - T.CORES_KEPT_FOR_MAIN)
    rebuilt = {}
    exec(s.code, {"DataLoader": DataLoader, "train_ds": ds}, rebuilt)
    assert rebuilt["train_loader"].num_workers == workers and rebuilt["train_loader"].persistent_workers


def test_local_ranks_share_the_cpus(monkeypatch, one_torch_thread):
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    ds = SlowDataset(16 * 8, delay=0.002, compute=True)
    report = _train({"train_ds": ds, "train_loader": DataLoader(ds, batch_size=16)}, _mlp(128))
    s = only(report.suggestions, "dataloader")
    assert s.evidence["local_ranks"] == 2


def test_fast_loader_and_big_batches_have_nothing_to_improve(one_torch_thread):
    ds = TensorDataset(torch.randn(64 * 12, 256), torch.randint(0, 4, (64 * 12,)))
    # Whole batches by one indexing call: the loader costs microseconds per step.
    batched = DataLoader(ds, batch_size=None, sampler=BatchSampler(SequentialSampler(ds), 64, drop_last=False))
    report = _train({"train_ds": ds, "train_loader": batched}, _mlp(1024, inputs=256))
    assert measures.data_wait(report).share < T.DATALOADER_WAIT_SHARE
    assert kinds(report.suggestions) == [NOTHING_TO_IMPROVE]
    s = report.suggestions[0]
    assert s.title.startswith("Nothing to improve")
    assert "the DataLoader keeps up" in s.detail and "fixed per-step cost is" in s.detail


class OneSlowBatch(Dataset):
    """Fast samples, but the batch at ``slow_batch`` takes 60 ms once (a page fault storm, a GC pause)."""

    def __init__(self, n: int, batch: int, slow_batch: int) -> None:
        self.data, self.slow = torch.randn(n, 32), slow_batch * batch

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, i: int):
        if i == self.slow:
            time.sleep(0.06)
        return self.data[i], i % 4


def test_one_slow_fetch_is_no_dataloader_bottleneck(one_torch_thread):
    """Waiting over 5% of the profiled time, all of it one fetch: nothing to change, no suggestion."""
    ds = OneSlowBatch(16 * 12, 16, slow_batch=3)  # fetched in step 2, the first active one
    report = _train({"train_ds": ds, "train_loader": DataLoader(ds, batch_size=16)}, _mlp(256))
    assert measures.data_wait(report).share > T.DATALOADER_WAIT_SHARE
    assert "dataloader" not in kinds(report.suggestions)


def test_tensor_dataset_indexes_whole_batches(one_torch_thread):
    ds = TensorDataset(torch.randn(64 * 16, 32), torch.randint(0, 4, (64 * 16,)))
    ns = {"train_ds": ds, "train_loader": DataLoader(ds, batch_size=64, shuffle=True)}
    report = _train(ns, _mlp(32))
    s = only(report.suggestions, "dataloader")
    assert "BatchSampler(RandomSampler(train_ds), batch_size=64, drop_last=False),  # changed: replaces shuffle=True" \
        in s.code
    assert "batch_size=None,  # changed: was 64" in s.code and "num_workers" not in s.code
    namespace = {"DataLoader": DataLoader, "train_ds": ds}
    exec(s.code, namespace)
    x, y = next(iter(namespace["train_loader"]))
    assert x.shape == (64, 32) and y.shape == (64,)


def test_workers_restarted_every_epoch_get_persistent_workers(one_torch_thread):
    ds = SlowDataset(8 * 6, delay=0.002)
    ns = {"train_ds": ds, "train_loader": DataLoader(ds, batch_size=8, num_workers=1)}
    report = _train(ns, _mlp(64), epochs=3, wait=0, warmup=0, active=2)
    assert report.run.loaders[0].iterations_started == 3
    s = only(report.suggestions, "dataloader")
    assert "persistent_workers" in s.evidence["changed"]
    assert "persistent_workers=True,  # changed: was False" in s.code


def test_tiny_batches_on_cpu_get_a_larger_batch(one_torch_thread):
    ds = TensorDataset(torch.randn(2 * 40, 4), torch.randint(0, 4, (2 * 40,)))
    loader = DataLoader(ds, batch_size=2)
    report = _train({"train_ds": ds, "train_loader": loader}, _mlp(4, inputs=4), wait=1, warmup=1, active=10)
    s = only(report.suggestions, "batch_size")
    # Most of the step is per-call cost and the Python around the calls; only the calls' own is
    # counted as fixed, as the rest could be a loop over the samples.
    assert s.evidence["fixed_share"] + s.evidence["loose_python_share"] > T.CPU_OVERHEAD_SHARE
    assert s.evidence["fixed_share"] > T.CPU_SMALL_BATCH_OVERHEAD_SHARE
    assert f"batch_size={2 * T.CPU_BATCH_GROWTH},  # changed: was 2" in s.code
    o, k = s.evidence["fixed_share"], T.CPU_BATCH_GROWTH
    assert s.gain == pytest.approx(k / (o + k * (1 - o)), rel=1e-3)


def test_large_batches_on_cpu_get_no_batch_advice(one_torch_thread):
    ds = TensorDataset(torch.randn(256 * 8, 256), torch.randint(0, 4, (256 * 8,)))
    report = _train({"train_ds": ds, "train_loader": DataLoader(ds, batch_size=256)}, _mlp(1024, inputs=256))
    assert measures.cpu_overhead(report, T.CPU_FIXED_COST_QUANTILE).share < T.CPU_OVERHEAD_SHARE
    assert "batch_size" not in kinds(report.suggestions)


def test_memory_growth_points_to_tensors_kept_with_their_graph(one_torch_thread):
    """Ten profiled steps of allocator events: the trace's allocated bytes, exact unlike RSS."""
    ds = TensorDataset(torch.randn(128 * 12, 64), torch.randint(0, 4, (128 * 12,)))
    ns = {"train_ds": ds, "train_loader": DataLoader(ds, batch_size=128)}
    leaky = _train(ns, _mlp(1024, inputs=64), hold=True, wait=0, warmup=1, active=10)
    s = only(leaky.suggestions, "memory_growth")
    assert s.evidence["slope_bytes_per_step"] > 2**20  # 128 x 1024 floats kept per layer per step
    # No cell source to name a line in: the fixes in words, no code with names the user's code lacks.
    assert s.code is None and "line" not in s.evidence
    assert ".item()" in s.detail and ".detach()" in s.detail and "no_grad" in s.detail and "--stack" in s.detail
    clean = _train(ns, _mlp(1024, inputs=64), hold=False, wait=0, warmup=1, active=10)
    assert "memory_growth" not in kinds(clean.suggestions)


def test_sync_location_is_the_cell_line(shell):
    """With --stack, the cell's line marks place an aten::item on its own line of the cell."""
    shell.run_cell("total = 0.0").raise_error()
    shell.run_cell(
        "%%torchprofile --stack -q -o run\n"
        "for x, y in train_loader:\n"
        "    loss = F.cross_entropy(model(x), y)\n"
        "    opt.zero_grad()\n"
        "    loss.backward()\n"
        "    opt.step()\n"
        "    total += loss.item()\n"
    ).raise_error()
    report = shell.user_ns["run"]
    t, tree = report.table, report.operator_tree
    names = t.names[t.name_code[tree.index]].astype(str)
    pos = int((names == "aten::item").nonzero()[0][0])
    where = measures.sync_locator(report).where(tree.index[[pos]], np.array([pos]))[0]
    assert where == "cell line 6: total += loss.item()"


# -- loader code ------------------------------------------------------------------------------------------
def test_unchanged_call_stays_on_one_line():
    record = LoaderRecord.of(DataLoader(TensorDataset(torch.zeros(4, 1)), batch_size=2, shuffle=True, drop_last=True))
    record.name, record.dataset_name = "train_loader", "train_ds"
    assert dataloader_call(args_from_record(record)) == \
        "train_loader = DataLoader(train_ds, batch_size=2, shuffle=True, drop_last=True)"


def test_changed_arguments_are_marked_and_invalid_ones_dropped():
    record = LoaderRecord.of(DataLoader(TensorDataset(torch.zeros(4, 1)), batch_size=2, num_workers=2,
                                        persistent_workers=True, prefetch_factor=4))
    code = dataloader_call(args_from_record(record), {"num_workers": 0})
    assert "num_workers=0,  # changed: was 2" in code
    assert "persistent_workers" not in code and "prefetch_factor" not in code  # DataLoader rejects them then
    assert code.startswith("loader = DataLoader(\n    dataset,")  # no names known: generic ones


def test_unknown_arguments_are_marked_without_an_old_value():
    args = LoaderArgs(loader_name="loader", dataset=Expr("dataset"), batch_size=Expr("batch_size"),
                      num_workers=Expr("num_workers"), unknown=frozenset({"num_workers", "pin_memory"}))
    code = dataloader_call(args, {"pin_memory": True})
    assert "pin_memory=True,  # changed\n" in code and "num_workers" not in code
    with pytest.raises(ValueError, match="collate_fn"):
        dataloader_call(args, {"collate_fn": None})


def test_suggestion_validates_its_fields():
    with pytest.raises(ValueError, match="severity"):
        Suggestion(kind="x", title="t", severity="urgent")
    with pytest.raises(ValueError, match="gain"):
        Suggestion(kind="x", title="t", severity="low", gain=0.5)


def test_a_claim_is_a_bound_or_an_estimate_with_its_range():
    bound = Suggestion(kind="x", title="t", severity="low", gain=1.3)
    assert bound.claim == "at_most" and bound.gain_range == (1.0, 1.3)
    guess = Suggestion(kind="x", title="t", severity="low", gain=1.3, claim="estimate", gain_low=1.1, gain_high=1.6)
    assert guess.gain_range == (1.1, 1.6) and guess.as_dict()["gain_range"] == [1.1, 1.6]
    with pytest.raises(ValueError, match="estimate needs"):  # the estimate outside its own range
        Suggestion(kind="x", title="t", severity="low", gain=2.0, claim="estimate", gain_low=1.1, gain_high=1.6)
    with pytest.raises(ValueError, match="claim"):  # a bound has no range
        Suggestion(kind="x", title="t", severity="low", gain=1.3, gain_low=1.1, gain_high=1.6)


def test_sync_location_outside_a_cell_is_the_user_function():
    """A script profiled with stacks: the first Python frame outside library code."""
    model = nn.Linear(8, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def train_step(x: torch.Tensor) -> float:
        loss = model(x).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()

    with nbprofiler.profile(stack=True, wait=0, warmup=0, active=3) as run:
        for _ in range(3):
            train_step(torch.randn(4, 8))
    report = run.report
    t, tree = report.table, report.operator_tree
    names = t.names[t.name_code[tree.index]].astype(str)
    pos = int((names == "aten::item").nonzero()[0][0])
    where = measures.sync_locator(report).where(tree.index[[pos]], np.array([pos]))[0]
    assert where.endswith(", in train_step") and "test_advice_rules.py" in where
