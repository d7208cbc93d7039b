"""The verdicts of bench/advice_accuracy.py: when a measured speed-up breaks a suggestion's
claim, how a suggestion's code is pasted into the cell it was made for, and how its summary
counts failing pastes, slowdowns, estimates that hold, stable re-runs and ``--compare`` readings.

The benchmark itself is timed and runs minutes; these are the rules its table follows,
checked on the cases a reader of that table would check by hand.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from accuracy_workloads import COMPARE_KNOB, LEAKY_VALIDATION, WORKLOADS
from advice_accuracy import (
    Row, broken_claim, compare_targets, distinct, failure, is_guidance, paste, quartiles, reading, row_targets,
    spread, stability, stability_target, suggestion_rows,
)
from conftest import shared_trace

from nbprofiler.advice.suggestion import Suggestion

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


# -- the summary ---------------------------------------------------------------------------------
def measured(claim: str, low: float, high: float, median: float, noise: float = 0.02) -> Row:
    return Row("w", "k", "", "", "", outcome="speed", claim=claim, low=low, high=high, median=median, noise=noise)


def targets(rows: list[Row]) -> dict[str, tuple[str, bool]]:
    return {t.name: (t.value, t.met) for t in row_targets(rows)}


def test_a_card_whose_code_is_only_comments_is_guidance_not_pasted_code():
    guidance = "# batch 4x more items per step: the loop builds its batches itself\n\n# batch_size = 64"
    assert is_guidance(guidance)
    assert not is_guidance("# more workers\ntrain_loader = DataLoader(train_ds, num_workers=1)")
    card = Suggestion("batch_size", "use larger batches", "medium", code=guidance, gain=1.5)
    rows = suggestion_rows(LEAKY_VALIDATION, [card], rounds=1, steps=5)  # nothing is run for guidance
    assert [(r.outcome, r.verdict) for r in rows] == [("guidance", "guidance (comments only): no code to paste")]
    found = targets(rows)
    assert found["pasted_codes_failing"] == ("0 of 0 pasted (1 guidance cards: no code to paste)", True)
    assert found["suggestions_below_0.97x"] == ("0 of 0 measured", True)


def test_the_summary_counts_failed_pastes_slowdowns_and_estimates_that_hold():
    rows = [
        Row("w", "dataloader", "", "—", "code fails when pasted", True, "paste_failed"),
        measured("at_most", 1.0, 1.21, 0.91),  # a worker suggestion that slows the loop
        measured("at_most", 1.0, 1.21, 0.975),  # within 3%: not counted as slower
        measured("estimate", 2.98, 4.0, 1.74),  # the batch estimate a real batch missed
        measured("estimate", 1.2, 1.9, 1.5),
        measured("estimate", 1.2, 1.9, 1.9),  # the range's end holds
        measured("at_most", 1.0, 1.61, 2.41, noise=0.1),  # beyond the bound by more than the spread
        Row("w", "memory_growth", "", "", "memory still grows", True, "memory"),
        Row("w", "nothing to improve", "—", "—", "—", outcome="nothing"),
    ]
    found = targets(rows)
    assert found["pasted_codes_failing"] == ("1 of 8 pasted (0 guidance cards: no code to paste)", False)
    assert found["suggestions_below_0.97x"] == ("1 of 6 measured", False)
    assert found["estimates_holding_median"] == ("2/3 (67%)", False)
    assert found["bounds_exceeded"] == ("1 of 3 'at most' claims", False)
    assert found["leak_fixes_still_growing"] == ("1", False)


def test_nine_estimates_in_ten_meet_the_target_and_eight_do_not():
    inside, outside = measured("estimate", 1.2, 1.9, 1.5), measured("estimate", 1.2, 1.9, 1.1)
    assert targets([inside] * 9 + [outside])["estimates_holding_median"] == ("9/10 (90%)", True)
    assert targets([inside] * 8 + [outside] * 2)["estimates_holding_median"] == ("8/10 (80%)", False)
    assert targets([measured("at_most", 1.0, 1.3, 1.2)]) == {
        "pasted_codes_failing": ("0 of 1 pasted (0 guidance cards: no code to paste)", True),
        "suggestions_below_0.97x": ("0 of 1 measured", True),
        "estimates_holding_median": ("0/0 (none measured)", True),
        "bounds_exceeded": ("0 of 1 'at most' claims", True),
        "leak_fixes_still_growing": ("0", True),
    }


def test_a_rerun_agrees_when_its_kinds_are_its_workloads_most_common_set():
    batch, nothing = frozenset({"batch_size"}), frozenset({"nothing_to_improve"})
    gan = [nothing, batch, nothing, nothing, nothing, batch, nothing, nothing]  # 2 runs of 8 flip
    mlp = [frozenset({"compile", "batch_size"}), frozenset({"batch_size", "compile"}), batch]
    assert stability({"gan": gan, "mlp": mlp}) == (6 + 2, 8 + 3)
    assert stability({"tie": [batch, nothing]}) == (1, 2)
    steady = {f"w{i}": [batch, batch, batch] for i in range(3)}
    assert stability_target({**steady, "flips": [batch, nothing, batch]}).met  # 11 of 12
    assert stability_target({**steady, "flips": [batch, nothing, nothing]}).met  # the most common set is kept
    assert not stability_target({**steady, "flips": [batch, nothing, frozenset({"compile"})]}).met  # 10 of 12
    assert stability_target({"gan": gan}).line() == (
        "SUMMARY identical_reruns_same_kinds: 6/8 (75%) (target >= 90%): MISSED")


def test_a_comparison_reads_as_its_verdict_says():
    import nbprofiler

    c = nbprofiler.compare(shared_trace("v100_resnet50_train_num_workers_0"),
                           shared_trace("v100_resnet50_train_num_workers_4"))
    assert reading(c.changed, c.speedup) in c.verdict  # "1.40× faster (1.01–1.50)"
    same = nbprofiler.compare(shared_trace("v100_resnet50_train_num_workers_0"),
                              shared_trace("v100_resnet50_train_num_workers_0"))
    assert reading(same.changed, same.speedup) == "no measurable change"
    assert same.verdict.startswith("no measurable change")
    assert reading(True, 0.8) == "slower" and reading(False, 1.4) == "no measurable change"


def test_compare_counts_a_change_read_faster_and_an_identical_cell_read_unchanged():
    faster, none, slower = "faster", "no measurable change", "slower"
    met = compare_targets([faster] * 9 + [none], [none] * 9 + [slower])
    assert [(t.value, t.met) for t in met] == [("9 of 10", True), ("9 of 10", True)]
    missed = compare_targets([faster] * 3 + [none] * 7, [none] * 8 + [faster, "no comparison"])
    assert [(t.value, t.met) for t in missed] == [("3 of 10", False), ("8 of 10", False)]


def test_each_different_card_of_the_reruns_is_measured_once():
    first = Suggestion("dataloader", "use num_workers=1", "low", code="loader = DataLoader(ds, num_workers=1)")
    again = Suggestion("dataloader", "use num_workers=1", "low", code=first.code, gain=1.2)
    other = Suggestion("dataloader", "use num_workers=2", "low", code="loader = DataLoader(ds, num_workers=2)")
    nothing = Suggestion("nothing_to_improve", "Nothing to improve", "low")
    assert distinct([[nothing], [first], [again, other], [nothing]]) == [nothing, first, other]


def test_a_worker_failure_is_one_line():
    e = RuntimeError("Caught RuntimeError in DataLoader worker process 0.\nTraceback:\n  File x\n"
                     "RuntimeError: stack expects each tensor to be equal size\n")
    assert failure(e) == ("code fails when pasted: RuntimeError: "
                          "RuntimeError: stack expects each tensor to be equal size")


def test_the_workloads_are_twenty_distinct_loops_that_count_their_samples():
    assert len(WORKLOADS) >= 20
    assert len({w.name for w in WORKLOADS}) == len({w.cell + w.setup for w in WORKLOADS}) == len(WORKLOADS)
    for w in (*WORKLOADS, COMPARE_KNOB):
        assert "samples +=" in w.cell, w.name
        compile(w.setup, w.name, "exec")
        compile(w.cell, w.name, "exec")
