"""Every number the suggestion rules compare against, in one place.

A rule never hard-codes a limit: it reads it from here, so the documentation,
the tests and the rules cannot disagree. Each value says why it is what it is.
Shares are fractions of the step time (0.05 = 5%); speed-ups are factors.
"""
from __future__ import annotations

# -- Severity ----------------------------------------------------------------------------------
# A change that can make steps 1.5x faster or more is "high"; from 1.15x "medium"; below that
# "low". Changes that do not speed steps up (memory) set their severity from their own risk.
SEVERITY_HIGH_GAIN = 1.5
SEVERITY_MEDIUM_GAIN = 1.15

# -- DataLoader ------------------------------------------------------------------------------
# Waiting for batches above 5% of the step is worth a change of settings; below it the loader
# keeps up and we say nothing (the old plugin used the same 5%, so we never alarm more often).
DATALOADER_WAIT_SHARE = 0.05
# Workers needed = per-batch load time / compute time, times this margin, because batch load
# times vary and a worker that is exactly as fast as the step still makes it wait now and then.
WORKER_MARGIN = 1.25
# One CPU core stays with the training process itself (Python, the optimizer, kernel launches).
CORES_KEPT_FOR_MAIN = 1
# Workers that need cores the step's compute threads use are proposed, with fewer threads
# (torch.set_num_threads), only where the step still gets this much faster if compute slows
# down in proportion to the threads it gives up; below it the trade is within noise or a loss.
SPLIT_MIN_GAIN = 1.05
# A trace does not say how many cores its machine had: its loader gets that machine's cores less
# the main process's, up to this many workers (or what its figures need, if more).
TRACE_MAX_WORKERS = 8
# A step whose wait is this many times the median wait (and at least STARTUP_MIN_MS longer)
# is a worker start-up, not steady-state loading: that is what persistent_workers removes.
STARTUP_SPIKE_FACTOR = 4.0
STARTUP_MIN_MS = 5.0
# With workers and still waiting, prefetching deeper only helps when waiting is bursty: the
# median step's wait is under this fraction of the mean (a few steps wait long, most not).
PREFETCH_BURSTY_RATIO = 0.5
# The prefetch_factor we suggest (PyTorch's default is 2 batches per worker).
PREFETCH_SUGGESTED = 4

# -- Batch size --------------------------------------------------------------------------------
# A GPU busy under 50% of the time it is not waiting for data has room for more work per step
# (the old plugin's threshold, applied after removing the data wait it could not tell apart).
LOW_GPU_UTILIZATION = 0.50
# The largest batch we suggest keeps the estimated peak under 85% of device memory: the rest
# covers fragmentation, cuDNN workspaces and batches that are larger than the measured ones.
MEMORY_TARGET_SHARE = 0.85
# A peak above 90% of device memory is near the limit: one larger batch or longer sequence away
# from an out-of-memory error (the old plugin's threshold).
MEMORY_NEAR_LIMIT_SHARE = 0.90
MEMORY_CRITICAL_SHARE = 0.95
# Only suggest a larger batch when it is at least this many times the current one.
MIN_BATCH_GROWTH = 2
# On CPU: the part of the step that is fixed cost per operator call and Python around it. Above
# 50% a batch several times larger costs little more time, so samples/s rises.
CPU_OVERHEAD_SHARE = 0.50
# A typical operator's fixed cost is estimated from the fast end of the operator durations.
CPU_FIXED_COST_QUANTILE = 0.10
# The larger CPU batch we suggest: this many times the current one (a power of two).
CPU_BATCH_GROWTH = 4

# -- AMP / tensor cores ------------------------------------------------------------------------
# Tensor cores exist from compute capability 7.0 (Volta); bf16 needs 8.0 (Ampere).
TENSOR_CORE_MIN_CC = (7, 0)
BF16_MIN_CC = (8, 0)
# Below 1% of kernel time on tensor-core kernels counts as "no kernel uses tensor cores".
TENSOR_CORE_SHARE_MAX = 0.01
# Matmul/conv kernels must be at least 10% of the step for AMP to be worth the change.
AMP_ELIGIBLE_MIN_SHARE = 0.10
# The bound assumes eligible kernels get at most 8x faster: the fp16 tensor-core peak over the
# fp32 peak on a V100 (125 / 15.7 TFLOP/s). Real speed-ups are usually 2-3x.
TENSOR_CORE_SPEEDUP_MAX = 8.0

# -- Host-device syncs ---------------------------------------------------------------------------
# A sync inside the step is worth removing when the GPU then sits idle for at least 1% of the
# step waiting for the host to queue work again.
SYNC_IDLE_SHARE = 0.01

# -- Launch-bound steps --------------------------------------------------------------------------
# GPU idle in a lone profiled step is often start-up (allocator growth, library handles, lazily
# loaded kernels), not the loop: judging idle time needs at least two profiled steps.
MIN_STEPS_FOR_IDLE = 2
# The GPU idle for more than 30% of the step, with the idle time not explained by data waiting or
# syncs, means the host cannot queue kernels as fast as the GPU runs them.
LAUNCH_IDLE_SHARE = 0.30
# Kernels under 10 microseconds finish faster than the host can launch the next one (a launch
# costs roughly 5-10 us). When half the kernels are that short, a launch-bound step is blamed on
# many tiny kernels (fuse them); otherwise on slow host code. Tiny kernels on a GPU that stays busy
# lose no time to launches, so they alone do not trigger the rule.
TINY_KERNEL_US = 10.0
TINY_KERNEL_SHARE = 0.50

# -- Conv nets on GPU -----------------------------------------------------------------------------
# Convolution kernels running 20% or more of the step make cuDNN's algorithm choice and layout matter.
CONV_MIN_SHARE = 0.20
# cudnn.benchmark picks the fastest algorithm per input shape; the bound assumes it makes conv
# kernels at most 1.3x faster (typical gains are a few percent to 20%).
CONV_TUNING_SPEEDUP_MAX = 1.3

# -- Memory growth -------------------------------------------------------------------------------
# Growth is judged by ``report.memory_growth`` (nbprofiler.analysis.memory, its thresholds are
# documented there), so the report's memory view and this suggestion never disagree.

# -- Measuring: tune_dataloader and batch_size_curve -------------------------------------------
# Settings are measured in interleaved rounds (each setting once per round, the order rotated), so
# machine noise hits them alike. 5 rounds give quartiles that mean something in a few seconds.
MEASURED_ROUNDS = 5
# The spread of a gain: the quartiles of its per-round ratios (the middle half of the rounds).
# A setting is recommended only when its median gain exceeds that spread (rounds.reliably_faster).
MEASURED_SPREAD = (0.25, 0.75)
# Among the reliably faster settings, those within 5% of the best count as equally fast. The tuner
# then takes the fewest workers (each costs a CPU core and a copy of the dataset), the batch curve
# the smallest batch (less memory, and usually better generalisation).
MEASURED_TIE_SHARE = 0.95
