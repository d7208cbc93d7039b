"""Profiling options, shared by the ``%%torchprofile`` magic and ``nbprofiler.profile``.

One dataclass, one validation: the magic parses its command line into the same
``ProfileOptions`` the Python API takes, so both reject bad values with the same
one-line message naming the option. Each field also holds the help of its flag, so
that the magic's parser is made from the fields and an option is declared once.
"""
from __future__ import annotations

import dataclasses
import numbers
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from .errors import OptionError

StepOn = Literal["auto", "optimizer", "dataloader", "manual"]
DeviceChoice = Literal["auto", "cpu", "cuda"]
STEP_ON_CHOICES: tuple[str, ...] = get_args(StepOn)
DEVICE_CHOICES: tuple[str, ...] = get_args(DeviceChoice)
SORT_KEYS = ("host_self_us", "host_total_us", "device_self_us", "device_total_us", "calls", "name")
PHASES = ("none", "wait", "warmup", "active")


def _option(default: Any, help: str, short: str | None = None, metavar: str | None = None) -> Any:
    """A field of ``ProfileOptions`` with what its flag shows in the magic's help: ``help``, where
    ``{default}`` is the default; ``short``, a one-letter flag besides the long one; ``metavar``,
    the name its value has there. A field that is on by default is a ``--no-...`` flag, and its
    help says what that flag does."""
    return field(default=default, metadata={"help": help.format(default=default), "short": short, "metavar": metavar})


@dataclass(frozen=True)
class ProfileOptions:
    """What to profile and how. Schedule fields mean what they mean in ``torch.profiler.schedule``."""

    wait: int = _option(1, "Steps to skip at the start of each cycle before warming up (default {default}).")
    warmup: int = _option(1, "Steps traced but discarded, so start-up cost is not measured (default {default}).")
    active: int = _option(3, "Steps recorded in each cycle (default {default}).")
    repeat: int = _option(1, "Number of wait/warmup/active cycles; 0 repeats until the cell ends (default {default}).")
    skip_first: int = _option(0, "Steps to ignore before the first cycle (default {default}).")
    # Watch a whole run: a cycle every N steps until the cell ends, each reduced to a row of
    # ``report.cycles`` off the loop (``capture/cycles.py``), so memory grows with the cycles, not the steps.
    every: int | None = _option(None, "Profile --active steps every N steps until the cell ends, one row of "
                                      "report.cycles per cycle (sets --wait to N - warmup - active, --repeat to 0).",
                                metavar="N")
    step_on: StepOn = _option("auto", f"What ends a step: {'|'.join(STEP_ON_CHOICES)} (default {{default}}: optimizer "
                                      "steps, else DataLoader batches; nbprofiler.step() always).")
    iterations: int | None = _option(None, "Run the cell body N times, each run one step (for cells with no loop).",
                                     short="-n")
    device: DeviceChoice = _option("auto", f"{'|'.join(DEVICE_CHOICES)}: record CUDA activity "
                                           "(auto: when torch.cuda.is_available()).")
    memory: bool = _option(True, "Do not record tensor allocations (slightly lower overhead).")
    shapes: bool = _option(False, "Record input shapes, and group operators by shape.")
    stack: bool = _option(False, "Record Python stacks, to attribute time to the lines of the cell.")
    modules: bool = _option(False, "Record the nn.Module hierarchy, for time per module.")
    trace: str | None = _option(None, "Write the Chrome trace to PATH (.json or .json.gz); opens in Perfetto.",
                                metavar="PATH")
    tensorboard: str | None = _option(None, "Also write DIR in the layout of torch.profiler.tensorboard_trace_handler.",
                                      metavar="DIR")
    sort: str | None = _option(None, f"Sort the operator table by one of: {', '.join(SORT_KEYS)}.")
    top: int = _option(15, "Number of operators to show (default {default}).")
    quiet: bool = _option(False, "Display nothing (use with -o).", short="-q")
    # Keep the run in the local history (nbprofiler.history), which --compare reads.
    history: bool = _option(True, "Do not keep this run in the local history (nbprofiler.history(); file: "
                                  "NBPROFILER_HISTORY).")

    def __post_init__(self) -> None:
        counts = (("wait", 0), ("warmup", 0), ("active", 1), ("repeat", 0), ("skip_first", 0), ("top", 1))
        optional = tuple((name, 1) for name in ("iterations", "every") if getattr(self, name) is not None)
        for name, low in counts + optional:
            value = getattr(self, name)
            if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < low:
                raise OptionError(long_flag(name), f"must be a whole number >= {low}, got {value!r}")
            # np.int64(3) from a config or a sweep is a whole number too; torch's schedule
            # and the report want plain ints.
            object.__setattr__(self, name, int(value))
        if self.every is not None:
            self._every_schedule()
        if self.step_on not in STEP_ON_CHOICES:
            raise OptionError("--step-on", f"must be one of {', '.join(STEP_ON_CHOICES)}, got {self.step_on!r}")
        if self.device not in DEVICE_CHOICES:
            raise OptionError("--device", f"must be one of {', '.join(DEVICE_CHOICES)}, got {self.device!r}")
        if self.sort is not None and self.sort not in SORT_KEYS:
            raise OptionError("--sort", f"must be one of {', '.join(SORT_KEYS)}, got {self.sort!r}")
        if self.trace is not None and not str(self.trace).endswith((".json", ".json.gz")):
            raise OptionError("--trace", f"the file name must end in .json or .json.gz, got {self.trace!r}")

    def _every_schedule(self) -> None:
        """``--every N``: cycles of N steps, repeated until the cell ends. The wait fills the cycle
        (set again on each ``replace``, so a new N or warmup gives a new wait); a ``--repeat``
        other than 0 or its default contradicts "until the cell ends" and is refused."""
        every = int(self.every or 0)
        least = self.warmup + self.active
        if every < least:
            raise OptionError("--every", f"must be at least --warmup + --active ({self.warmup} + {self.active} = "
                                         f"{least}), got {every}")
        if self.repeat not in (0, 1):
            raise OptionError("--repeat", f"cannot be combined with --every, which repeats until the cell ends; "
                                          f"got {self.repeat}")
        object.__setattr__(self, "wait", every - least)
        object.__setattr__(self, "repeat", 0)

    def replace(self, **changes: Any) -> "ProfileOptions":
        """A copy with ``changes``; an unknown name is an ``OptionError`` listing the options.

        The values are typed ``Any`` because they come from users and configs unchecked:
        ``__post_init__`` validates them, with an ``OptionError`` that names the flag.
        """
        known = {f.name for f in dataclasses.fields(self)}
        for name in changes:
            if name not in known:
                raise OptionError(name, f"is not an option; the options are {', '.join(sorted(known))}")
        return dataclasses.replace(self, **changes)

    @property
    def cycle_length(self) -> int:
        return self.wait + self.warmup + self.active

    @property
    def steps_needed(self) -> int | None:
        """Steps the schedule needs to finish, or None when it repeats forever."""
        return None if self.repeat == 0 else self.skip_first + self.repeat * self.cycle_length

    def phase_of(self, step: int) -> str:
        """The schedule phase of a step, as ``torch.profiler.schedule`` decides it."""
        if step < self.skip_first:
            return "none"
        step -= self.skip_first
        if self.repeat > 0 and step // self.cycle_length >= self.repeat:
            return "none"
        mod = step % self.cycle_length
        if mod < self.wait:
            return "wait"
        if mod < self.wait + self.warmup:
            return "warmup"
        return "active"


def long_flag(field_name: str) -> str:
    """The magic's flag for a field of ``ProfileOptions``, as its errors name it (``--skip-first``)."""
    return "--" + field_name.replace("_", "-")
