"""The trace fuzzer at length: the tests of tests/trace/test_fuzz_traces.py with thousands of cases.

Runs the named hostile inputs and the three hypothesis property tests (byte, gzip and
JSON-level mutations of the shared small traces) under the ``nbprofiler-bench``
settings profile, or another named with ``--profile``. Prints the number of cases
run, how many loaded (and rendered) and how many were refused with a TraceError,
and each failure with its falsifying example. Exits 1 on any failure.

    .venv/bin/python bench/fuzz.py [--profile nbprofiler-bench]
"""
from __future__ import annotations

import argparse
import faulthandler
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MIN_CASES = 2000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="nbprofiler-bench", help="hypothesis settings profile")
    args = parser.parse_args()
    os.environ["NBPROFILER_FUZZ_PROFILE"] = args.profile  # read when the test module is imported
    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
    import warnings

    warnings.simplefilter("ignore")  # renderer warnings on odd data are not failures
    import test_fuzz_traces as fuzz

    faulthandler.dump_traceback_later(3600, exit=True)  # a hang ends the run with the stacks
    failures: list[tuple[str, BaseException]] = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        tests = [(f"named: {case}", lambda case=case: fuzz.test_named_hostile_input(case, scratch))
                 for case in fuzz.NAMED]
        tests += [(t.__name__, lambda t=t: t(scratch=scratch)) for t in
                  (fuzz.test_byte_level_mutations, fuzz.test_json_level_mutations,
                   fuzz.test_timing_mutations_still_load)]
        for label, run in tests:
            before = fuzz.Outcome.cases
            start = time.perf_counter()
            try:
                run()
            except BaseException as exc:  # noqa: BLE001 - every failure is reported, then the next test runs
                failures.append((label, exc))
            if not label.startswith("named"):
                print(f"{label}: {fuzz.Outcome.cases - before} cases in {time.perf_counter() - start:.0f} s")
    wall = time.perf_counter() - t0
    o = fuzz.Outcome
    print(f"{o.cases} cases in {wall:.0f} s: {o.loaded} loaded and rendered, {o.refused} refused with a TraceError, "
          f"{len(failures)} failure(s)")
    for label, failure in failures:
        print(f"\nFAILED {label}:")
        print("".join(traceback.format_exception(failure))[-4000:])
        for note in getattr(failure, "__notes__", []):
            print(note)
    if o.cases < MIN_CASES and args.profile == "nbprofiler-bench":
        print(f"fewer than {MIN_CASES} cases ran")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
