"""A real 2-process gloo DDP run on CPU, traced per rank through
``tensorboard_trace_handler``, then ``nbprofiler.load(dir)`` on the directory.

Rank 1 sleeps before each backward, so it is the straggler: rank 0 reaches the
gradient all-reduce first and waits inside it for rank 1. Both ranks then show
about the same step time; the difference is where the time went.
"""
from __future__ import annotations

import datetime
import os
import socket
import time
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import nbprofiler
from nbprofiler.analysis.ranks import stands_out

WORLD = 2
SLOW_RANK = 1
SLEEP_S = 0.03
ACTIVE = 3


def worker(rank: int, port: int, out: str) -> None:
    """One DDP rank: a tiny model, SGD, a scheduled profiler writing rank-named traces."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD, timeout=datetime.timedelta(seconds=60))
    try:
        torch.manual_seed(0)
        model = torch.nn.parallel.DistributedDataParallel(
            torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4)))
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        x, y = torch.randn(16, 32), torch.randn(16, 4)
        schedule = torch.profiler.schedule(wait=0, warmup=1, active=ACTIVE)
        handler = torch.profiler.tensorboard_trace_handler(out, worker_name=f"rank{rank}")
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=schedule,
                                    on_trace_ready=handler) as prof:
            for _ in range(1 + ACTIVE):
                opt.zero_grad()
                loss = torch.nn.functional.mse_loss(model(x), y)
                if rank == SLOW_RANK:
                    time.sleep(SLEEP_S)
                loss.backward()
                opt.step()
                prof.step()
    finally:
        dist.destroy_process_group()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ddp_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("ddp")
    mp.spawn(worker, args=(free_port(), str(out)), nprocs=WORLD, join=True)
    return out


def test_loading_the_directory_gives_both_ranks(ddp_dir):
    assert len(list(ddp_dir.glob("*.pt.trace.json"))) == WORLD
    report = nbprofiler.load(ddp_dir)
    assert sorted(report.ranks) == [0, 1]
    assert report.table.meta.rank == 0
    for rank, r in report.ranks.items():
        meta = r.meta
        assert (meta.rank, meta.world_size, meta.backend) == (rank, WORLD, "gloo")
        assert len(report.rank(rank).trace_steps) == ACTIVE
    assert report.rank(0) is report and report.rank(1).table.meta.rank == 1


def test_each_rank_counts_its_gloo_allreduce_every_step(ddp_dir):
    for r in nbprofiler.load(ddp_dir).ranks.values():
        comm = r.communication
        assert len(comm) == ACTIVE
        assert (comm["host_ops"] >= 1).all() and (comm["kernels"] == 0).all()
        assert (comm["communication_us"] > 0).all()
        assert ((comm["share"] > 0) & (comm["share"] <= 1)).all()


def test_the_sleeping_rank_is_the_straggler_and_the_other_waits(ddp_dir):
    cmp = nbprofiler.load(ddp_dir).rank_comparison.set_index("rank")
    assert list(cmp.index) == [0, 1]
    assert list(cmp["straggler"]) == [False, True]
    assert list(cmp["long_wait"]) == [True, False]
    assert "compute" in cmp.loc[1, "reason"] and "communication" in cmp.loc[0, "reason"]
    # The fast rank's wait is the sleep; the slow rank's own work includes it.
    assert cmp.loc[0, "communication"] > 0.6 * SLEEP_S * 1e6
    assert cmp.loc[1, "compute_us"] > SLEEP_S * 1e6
    # In lock-step: the step times agree, so step time alone would not have told.
    assert not cmp["slow_step"].any()
    assert cmp["step_us"].max() < 1.25 * cmp["step_us"].min()
    # Side by side: every breakdown category is a column, and they add up to the step.
    parts = [c for c in nbprofiler.load(ddp_dir).breakdown.columns if c not in ("step", "total")]
    assert cmp[parts].sum(axis=1).to_numpy() == pytest.approx(cmp["step_us"].to_numpy())


def test_a_single_trace_has_no_rank_comparison(ddp_dir):
    one = next(ddp_dir.glob("rank0*.pt.trace.json"))
    assert nbprofiler.load(one).rank_comparison.empty


def test_stands_out_rule():
    rng = np.random.default_rng(0)
    lockstep = 100.0 + rng.normal(0, 1.0, 8)
    assert not stands_out(lockstep).any()
    one_slow = lockstep.copy()
    one_slow[5] = 130.0
    assert list(np.flatnonzero(stands_out(one_slow))) == [5]
    # Far outside the spread, but not 10% off: not worth a flag.
    tight = np.array([100.0, 100.01, 99.99, 100.0, 105.0])
    assert not stands_out(tight).any()
    # Two ranks: more than 10% above the other.
    assert list(stands_out(np.array([100.0, 120.0]))) == [False, True]
    assert not stands_out(np.array([100.0, 105.0])).any()
    assert not stands_out(np.array([100.0])).any()
