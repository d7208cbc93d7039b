"""The verdicts of bench/advice_accuracy.py: when a measured speed-up breaks a suggestion's
claim, and how a suggestion's code is pasted into the cell it was made for.

The benchmark itself is timed and runs minutes; these are the rules its table follows,
checked on the cases a reader of that table would check by hand.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from accuracy_workloads import LEAKY_VALIDATION  # noqa: E402 - bench/ is on sys.path
from advice_accuracy import broken_claim, paste, quartiles, spread  # noqa: E402 - the same

CELL = LEAKY_VALIDATION.cell  # its line 6 keeps each validation loss with its graph


def test_spread_is_half_the_interquartile_range_of_the_rounds():
    ratios = [1.10, 0.90, 1.00, 1.30, 1.20]
    assert quartiles(ratios) == pytest.approx((1.0, 1.1, 1.2))
    assert spread(ratios) == pytest.approx(0.1)


def test_a_bound_broken_by_more_than_the_spread_is_flagged():
    assert "bound broken" in broken_claim("at_most", 2.14, 1.0, 2.14, measured=2.86, noise=0.1)


def test_a_bound_exceeded_within_the_spread_holds():
    assert broken_claim("at_most", 2.14, 1.0, 2.14, measured=2.20, noise=0.1) is None
    assert broken_claim("at_most", 1.25, 1.0, 1.25, measured=1.09, noise=0.02) is None


def test_a_slowdown_breaks_an_at_most_claim_unless_within_the_spread():
    assert "slower" in broken_claim("at_most", 1.23, 1.0, 1.23, measured=0.88, noise=0.03)
    assert broken_claim("at_most", 1.23, 1.0, 1.23, measured=0.97, noise=0.05) is None


def test_an_estimate_is_flagged_outside_its_range_widened_by_the_spread():
    assert "below the estimate" in broken_claim("estimate", 2.14, 1.85, 3.65, measured=1.07, noise=0.01)
    assert "above the estimate" in broken_claim("estimate", 1.5, 1.2, 1.9, measured=2.4, noise=0.2)
    assert broken_claim("estimate", 1.5, 1.2, 1.9, measured=1.15, noise=0.1) is None


def test_a_fix_that_names_its_line_replaces_that_line_indented_as_the_cell():
    fix = "with torch.no_grad():\n    history.append(loss_fn(model(x_val), y_val))"
    before, cell = paste(CELL, fix, {"line": 6})
    assert before == ""
    assert cell.splitlines()[4:8] == ["    opt.step()", "    with torch.no_grad():",
                                      "        history.append(loss_fn(model(x_val), y_val))", "    samples += len(x)"]
    compile(cell, "<cell>", "exec")


def test_a_fix_already_indented_as_the_cell_is_pasted_as_it_is():
    fix = "    history.append(loss_fn(model(x_val), y_val).item())"
    _, cell = paste(CELL, fix, {"line": 6, "line_source": CELL.splitlines()[5]})
    assert cell.splitlines()[5] == fix and len(cell.splitlines()) == len(CELL.splitlines())


def test_code_without_a_line_runs_above_the_unchanged_loop():
    code = "train_loader = DataLoader(train_ds, batch_size=64)"
    assert paste(CELL, code, {"batch_size": 16}) == (code, CELL)
