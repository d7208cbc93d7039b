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

# -- what a card may claim -------------------------------------------------------------------------
# An estimate whose range reaches below this is not shown as a change to paste: it could slow the
# loop by more than machine noise (a 4x batch estimated at 0.84-4.00x measured 0.53x on a CNN).
# The check says what to measure instead.
SHOWN_MIN_LOW = 0.97

# -- DataLoader ------------------------------------------------------------------------------
# Waiting for batches above 5% of the step is worth a change of settings; below it the loader
# keeps up and we say nothing (the old plugin used the same 5%, so we never alarm more often).
DATALOADER_WAIT_SHARE = 0.05
# ... but a change is proposed only where all that waiting gone would give at least this: below it
# (a wait under 9% of the step) the gain is within a loop's run-to-run noise, and a BatchSampler
# for a loader waiting 5% measured 0.95x [0.94-1.00]; the check passes and says so.
DATALOADER_MIN_GAIN = 1.10
# Workers needed = per-batch load time / compute time, times this margin, because batch load
# times vary and a worker that is exactly as fast as the step still makes it wait now and then.
WORKER_MARGIN = 1.25
# One CPU core stays with the training process itself (Python, the optimizer, kernel launches).
CORES_KEPT_FOR_MAIN = 1
# Workers that need cores the step's compute threads use are proposed, with fewer threads
# (torch.set_num_threads), only where the step still gets this much faster if compute slows
# down in proportion to the threads it gives up; below it the trade is within noise or a loss.
SPLIT_MIN_GAIN = 1.05
# Loading during which the loop's thread computed under this share of the wait (num_workers=0)
# waits on I/O (storage, network, a sleep): workers overlap such waits without cores of their
# own, so their number is not capped by the spare cores, only by IO_MAX_WORKERS (each worker is
# a process with its own copy of the dataset object).
IO_BOUND_CPU_SHARE = 0.3  # a sleep computes ~0%; a decode on a busy shared machine still over 50%
IO_MAX_WORKERS = 8
# The most time the main process was measured to spend taking one batch from a worker (the
# worker pickles it through shared memory, the loop unpickles it), which a run without workers
# cannot show: 1.2 ms a batch (EmbeddingBag ids, offsets and labels) to 3.4 ms (padded text and
# labels) on a 2-core machine, where num_workers=1 made those loops 0.43x and 0.89x as fast as
# waiting 0.4 and 0.3 ms a batch without workers. New workers are proposed with code only where
# the loop waits longer than this for each batch; below it, the card says to measure them.
WORKER_HANDOVER_MS = 3.5
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
# The fixed share is judged by the median of the profiled steps' shares, with the interval of order
# statistics that holds the true median at least 75% of the time: of 3 steps (the default --active),
# all 3, so a decision needs them all on one side of the threshold. Fewer than 3 steps decide nothing.
# A threshold inside the interval is no decision, and the verdict says how many steps would make one,
# up to 1,000 (a share that close to the threshold makes no difference worth a change).
FIXED_SHARE_LEVEL = 0.75
FIXED_SHARE_MIN_STEPS = 3
FIXED_SHARE_MAX_STEPS = 1000
# A profiled step that took more than twice the quickest one's time was stopped by the machine for part
# of it (a busy machine preempts the loop for milliseconds): wherever the pause fell, in an operator or
# in the optimizer, it reads near 0 or near 1, so such steps are left out of the decision. On a shared
# 2-core machine a third of 1 ms steps were.
PREEMPTED_STEP_FACTOR = 2.0
# The larger CPU batch we suggest: this many times the current one (a power of two).
CPU_BATCH_GROWTH = 4
# A batch of 16 or fewer samples on CPU is small: its per-sample cost also falls with the batch
# (wider matrix products vectorise and reuse the cache better), which the fixed-cost share cannot
# see. So a smaller fixed share already calls for a larger batch: a Transformer LM at batch 8, its
# fixed cost 6-15% of the step (depending on machine load), ran 1.33x faster at batch 32.
CPU_SMALL_BATCH = 16
CPU_SMALL_BATCH_OVERHEAD_SHARE = 0.05
# Where the step waits for data this much of its time, a larger CPU batch is not proposed: the
# wait grows with the batch, so the batch can give about 1/(wait share), 2x at 50%, even if all
# compute were shared out (only the loader's per-batch overhead shares out with it), while the
# DataLoader fix can give up to 1/(1 - wait share). Fix loading first.
CPU_BATCH_MAX_WAIT_SHARE = 0.50
# A larger batch is an extrapolation from one batch size, never a bound: the per-sample cost of
# the batch-sized work is assumed to stay the same (the estimate), with its range from a 25% rise
# (caches spilled: the low end) to a 3x fall (better vectorisation: the high end). An MLP
# 784-256-10 went from batch 16 to 64 at 2.86x, its per-sample cost about halved.
PER_SAMPLE_COST_RISE_MAX = 1.25
PER_SAMPLE_COST_FALL_MAX = 3.0

# -- torch.compile --------------------------------------------------------------------------------
# On CPU, for an inference step (advice.compile_gain): each assumption as (low end of the gain,
# estimate, high end). What compiled code leaves of the model's matmuls: as they are, or up to 10%
# slower at the low end (an MLP of three Linear at batch 16 ran 0.94x compiled, in a step of which
# it was about a fifth).
COMPILE_MATMUL_KEPT = (1.10, 1.0, 1.0)
# ... and of its convolutions, which it runs with weights prepacked once and data in channels-last:
# a 3x3 Conv2d(16, 16) on 8x16x64x64, one thread, took 0.68x its eager time compiled (5.4 -> 3.6 ms).
COMPILE_CONV_KEPT = (1.0, 0.75, 0.6)
# What it leaves of the light operators' work beyond their fixed cost per call: a chain of
# elementwise ops, norms and activations fused into one loop passes over memory once instead of
# once per op; at the low end fusion saves nothing.
COMPILE_FUSED_KEPT = (1.0, 0.5, 0.25)
# What it leaves of the Python inside the model (its forward, its submodules' __call__).
COMPILE_PYTHON_KEPT = (0.5, 0.1, 0.0)
# What one call of the compiled model costs itself (guards, the generated wrapper), in us.
COMPILE_CALL_US = (60.0, 30.0, 15.0)
# A card is shown where the estimate is at least 1.1x and the low end is at least SHOWN_MIN_LOW;
# where the estimate is high but the low end is not, the verdict says what to measure.
COMPILE_MIN_GAIN = 1.10
# On GPU, a launch-bound step: the estimate halves the time the GPU waits on the host, the high end
# removes it and runs the GPU's work up to 2x faster (fused kernels make one pass over memory
# instead of several); the low end is no gain.
COMPILE_FIXED_CUT_TYPICAL = 2.0
COMPILE_FUSION_SPEEDUP_MAX = 2.0

# -- AMP / tensor cores ------------------------------------------------------------------------
# Tensor cores exist from compute capability 7.0 (Volta); bf16 needs 8.0 (Ampere).
TENSOR_CORE_MIN_CC = (7, 0)
BF16_MIN_CC = (8, 0)
# Matmul/conv kernels must be at least 10% of the step for AMP to be worth the change.
AMP_ELIGIBLE_MIN_SHARE = 0.10
# Autocast's gain is an estimate: eligible kernels typically get 2-3x faster (2.5x assumed). The
# high end takes them at the tensor-core peak over the fp32 peak of recent GPUs (16x: an A100's
# 312 / 19.5 TFLOP/s; 8x on a V100), with the rest of the GPU's work (memory-bound kernels fed
# half-size values) up to 2x faster; the low end is no gain (casts cost as much as they save).
# Before compute capability 8.0 (V100, T4) the peak is 8x fp32's.
TENSOR_CORE_SPEEDUP_TYPICAL = 2.5
TENSOR_CORE_SPEEDUP_MAX = 16.0
TENSOR_CORE_SPEEDUP_MAX_BEFORE_BF16 = 8.0
HALF_PRECISION_MEMORY_SPEEDUP = 2.0
# From compute capability 8.0 fp32 matmuls and convolutions can already run on tensor cores as
# TF32 (cuDNN's default for convolutions); autocast to bf16 still doubles their peak (an A100's
# 312 / 156 TFLOP/s, an H100's alike) and halves the bytes they move. The estimate takes them
# 1.5x faster (large matmuls come near 2x, small ones gain little); the high end is the peak
# ratio (the spec table's, else 2x), the low end no gain.
TF32_TO_HALF_SPEEDUP_TYPICAL = 1.5
TF32_TO_HALF_SPEEDUP_MAX = 2.0

# -- TF32 ---------------------------------------------------------------------------------------
# TF32 tensor cores exist from compute capability 8.0 (Ampere). PyTorch runs fp32 matmuls on the
# fp32 units unless told otherwise (the default since 1.12), while cuDNN's convolutions use TF32
# by default: fp32 matmul kernels off tensor cores that take AMP_ELIGIBLE_MIN_SHARE of the step
# or more are worth one flag. They typically get TENSOR_CORE_SPEEDUP_TYPICAL faster; the high
# end is the TF32 peak over fp32's (the spec table's, else an A100's 156 / 19.5 = 8x), the low
# end no gain (small, memory-bound matmuls).
TF32_MIN_CC = (8, 0)
TF32_SPEEDUP_MAX = 8.0

# -- FP8 ----------------------------------------------------------------------------------------
# FP8 tensor cores exist from compute capability 8.9 (Ada; Hopper is 9.0) and on AMD's MI300
# (the spec table's fp8 figure). A matmul gains from FP8 only when its M, K and N are all large:
# torchao's float8 training tables show speed-ups from about 2048 on each side and losses on
# small shapes, where the operands' scaling and casts cost what the matmul saves. Large 16-bit
# matmuls taking AMP_ELIGIBLE_MIN_SHARE of the step or more are worth it. The estimate takes them
# 1.5x faster (torchao's large shapes: 1.3-1.8x); the high end is the fp8 peak over the 16-bit
# one (the spec table's, else 2x), the low end no gain.
FP8_MIN_CC = (8, 9)
FP8_MIN_SIZE = 2048
FP8_SPEEDUP_TYPICAL = 1.5
FP8_SPEEDUP_MAX = 2.0

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
# cudnn.benchmark picks the fastest algorithm per input shape, channels_last feeds tensor cores
# without layout conversions: the estimate takes conv kernels 1.1x faster (typical gains are a few
# percent to 20%), the high end 2x (channels_last with tensor cores), the low end no gain.
CONV_TUNING_SPEEDUP_TYPICAL = 1.1
CONV_TUNING_SPEEDUP_MAX = 2.0

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
