"""What the history measured, in place of what a rule estimates: the batch size and DataLoader cards.

A batch-size card estimates from one batch size, a DataLoader card from one setting; a
``batch_size_curve`` or ``tune_dataloader`` run of the same cell or set-up measured them
(``RunRecord.measured``, found by ``history/measurements.py``). Where such a measurement
applies, its card says the measured figure ("measured 1.80× the samples/s of batch_size=32 at
batch_size=64 on 2026-12-03, 5 rounds; middle half 1.70–1.90×") and its code sets what was
measured; where it found nothing reliably faster, the check passes, saying so: no change is
shown that the measurement says does not help. A measurement that no longer applies (another
device, torch version, or cell code) leaves the estimate as it was, and the card says why that
measurement cannot be quoted.

The measured values are typed numbers and settings (a history row may come from someone else):
the code is made from the run's own loader, never taken from the row.
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from ..records import StoredMeasurement
from .loader_code import args_from_record, batch_code, dataloader_call, measured_changes
from .suggestion import Suggestion, Verdict, passed, severity_for

if TYPE_CHECKING:
    from .rules.facts import Facts

# The measurement that tells each kind of card.
MEASURES = {"batch_size": "batch_size_curve", "dataloader": "tune_dataloader"}


def quoted(f: "Facts", verdict: Verdict) -> Verdict:
    """``verdict`` with its cards told what the history measured (see the module's docstring)."""
    run = f.report.run
    if verdict.state != "fired" or run is None or not run.measured:
        return verdict
    cards: list[Suggestion] = []
    refuted: list[StoredMeasurement] = []
    for card in verdict.suggestions:
        measured = next((m for m in run.measured if m.kind == MEASURES.get(card.kind)), None)
        if measured is not None and measured.stale is None:
            measured = _against_this_run(f, measured)
        if measured is None:
            cards.append(card)
        elif measured.stale is not None:
            cards.append(dataclasses.replace(card, facts=(*card.facts, _stale_line(measured))))
        elif measured.best is None or measured.speedup is None:
            refuted.append(measured)
        else:
            cards.append(_measured_card(f, card, measured))
    if cards or not refuted:
        return dataclasses.replace(verdict, suggestions=tuple(cards))
    m = refuted[0]
    return passed(verdict.check, f"{m.kind} measured no setting reliably faster than {m.reference} on {m.when} "
                                 f"({m.rounds} interleaved rounds)", measured_at=m.measured_at)


def _against_this_run(f: "Facts", m: StoredMeasurement) -> StoredMeasurement:
    """``m``, stale where its gains are against another setting than this run's: a curve measured from
    batch_size=8 says nothing of a step at batch_size=32, nor a tuning from 4 workers of a loader with none."""
    record = f.main_loader
    if record is None:
        return m
    now = (f"batch_size={record.batch_size}" if m.kind == "batch_size_curve" else
           f"num_workers={record.num_workers}")
    if m.reference == now or m.reference.startswith(now + ","):
        return m
    return dataclasses.replace(m, stale=f"its gains are against {m.reference}, and this run has {now}")


def _stale_line(m: StoredMeasurement) -> str:
    return f"a {m.kind} measured on {m.when} no longer applies, so this card keeps its estimate: {m.stale}"


def _measured_card(f: "Facts", card: Suggestion, m: StoredMeasurement) -> Suggestion:
    assert m.speedup is not None and m.best is not None
    low = min(m.speedup_low if m.speedup_low is not None else m.speedup, m.speedup)
    high = max(m.speedup_high if m.speedup_high is not None else m.speedup, m.speedup)
    what = "samples/s" if m.kind == "batch_size_curve" else "loop's speed"
    measured = f"measured {m.speedup:.2f}× the {what} of {m.reference} with {m.best}"
    figure = (f"{measured} on {m.when} by nbprofiler.{m.kind} ({m.rounds} interleaved rounds; middle half "
              f"{low:.2f}–{high:.2f}×)")
    gain = max(m.speedup, 1.0)
    return dataclasses.replace(
        card, title=f"Use {m.best}: {measured}", severity=severity_for(gain),
        facts=(*card.facts, figure), expected_gain=figure + ", in place of this card's estimate",
        gain=gain, gain_low=max(low, 1e-9), gain_high=max(high, gain), claim="estimate",
        code=_code(f, card, m), evidence={**card.evidence, "measured_speedup": m.speedup,
                                          "measured_at": m.measured_at})


def _code(f: "Facts", card: Suggestion, m: StoredMeasurement) -> str | None:
    """The run's own loader call with what was measured; the card's code where the loader is unknown."""
    record = f.main_loader
    if record is None or m.best_value is None:
        return card.code
    if m.kind == "batch_size_curve":
        factor = m.best_value / record.batch_size if record.batch_size else 1.0
        return batch_code(record, m.best_value, factor, trains=card.evidence.get("optimizer_us_per_step", 1) != 0)
    settings = {"num_workers": m.best_value, **({"pin_memory": m.pin_memory} if m.pin_memory is not None else {})}
    changes = measured_changes(settings, {"num_workers": record.num_workers, "pin_memory": record.pin_memory},
                               record.persistent_workers)
    return dataloader_call(args_from_record(record), changes, preamble="from torch.utils.data import DataLoader")
