"""Profiling options, shared by the ``%%torchprofile`` magic and ``nbprofiler.profile``.

One dataclass, one validation: the magic parses its command line into the same
``ProfileOptions`` the Python API takes, so both reject bad values with the same
one-line message naming the option.
"""
from __future__ import annotations

import dataclasses
import numbers
from dataclasses import dataclass
from typing import Any, Literal

from .errors import OptionError

StepOn = Literal["auto", "optimizer", "dataloader", "manual"]
DeviceChoice = Literal["auto", "cpu", "cuda"]
STEP_ON_CHOICES = ("auto", "optimizer", "dataloader", "manual")
DEVICE_CHOICES = ("auto", "cpu", "cuda")
SORT_KEYS = ("host_self_us", "host_total_us", "device_self_us", "device_total_us", "calls", "name")
PHASES = ("none", "wait", "warmup", "active")


@dataclass(frozen=True)
class ProfileOptions:
    """What to profile and how. Schedule fields mean what they mean in ``torch.profiler.schedule``."""

    wait: int = 1
    warmup: int = 1
    active: int = 3
    repeat: int = 1
    skip_first: int = 0
    step_on: StepOn = "auto"
    iterations: int | None = None
    device: DeviceChoice = "auto"
    memory: bool = True
    shapes: bool = False
    stack: bool = False
    modules: bool = False
    trace: str | None = None
    tensorboard: str | None = None
    sort: str | None = None
    top: int = 15
    quiet: bool = False
    history: bool = True  # keep the run in the local history (nbprofiler.history), which --compare reads

    def __post_init__(self) -> None:
        counts = (("wait", 0), ("warmup", 0), ("active", 1), ("repeat", 0), ("skip_first", 0), ("top", 1))
        for name, low in counts + ((("iterations", 1),) if self.iterations is not None else ()):
            value = getattr(self, name)
            if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < low:
                raise OptionError(_flag(name), f"must be a whole number >= {low}, got {value!r}")
            # np.int64(3) from a config or a sweep is a whole number too; torch's schedule
            # and the report want plain ints.
            object.__setattr__(self, name, int(value))
        if self.step_on not in STEP_ON_CHOICES:
            raise OptionError("--step-on", f"must be one of {', '.join(STEP_ON_CHOICES)}, got {self.step_on!r}")
        if self.device not in DEVICE_CHOICES:
            raise OptionError("--device", f"must be one of {', '.join(DEVICE_CHOICES)}, got {self.device!r}")
        if self.sort is not None and self.sort not in SORT_KEYS:
            raise OptionError("--sort", f"must be one of {', '.join(SORT_KEYS)}, got {self.sort!r}")
        if self.trace is not None and not str(self.trace).endswith((".json", ".json.gz")):
            raise OptionError("--trace", f"the file name must end in .json or .json.gz, got {self.trace!r}")

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


def _flag(field: str) -> str:
    return "--" + field.replace("_", "-")
