"""The golden dump: every table, suggestion, text, HTML, payload and explorer tab of the reports
the tests hold fixed, as text, so that a change meant to keep behaviour can be shown to keep it.

The reports are the real GPU traces of tests/data/traces, a comparison of two of them, and three
live CPU runs saved in tests/data/golden (a live run's figures change with every run, so the runs
are recorded once). Each saved run is read twice: as ``nbprofiler.load`` reads a saved report, and
as the live session builds a Report from the same run record and trace (``Report.from_live``).

``tests/data/golden/digests.json`` keeps one SHA-256 per artefact; test_golden.py checks them.
Run this file to see or renew them:

    python tests/golden.py --dump DIR     # every artefact as a file, to diff two versions
    python tests/golden.py --write        # renew digests.json (only for a change of behaviour)
    python tests/golden.py --record       # record the three live runs again (then --write)
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import re
import sys
import tempfile
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
TRACES = TESTS / "data" / "traces"
GOLDEN = TESTS / "data" / "golden"
DIGESTS = GOLDEN / "digests.json"

# Report members that take arguments, dumped with each argument a renderer passes.
_CALLS: dict[str, Callable[[Any], Any]] = {
    "breakdown_shares": lambda r: r.breakdown_shares(),
    "breakdown_shares(per_step)": lambda r: r.breakdown_shares(per_step=True),
    "launch_summary": lambda r: r.launch_summary(),
    "operator_table(by_shape)": lambda r: r.operator_table(True),
}
_VALUES = ("summary", "device", "notes", "lacks", "partial", "has_trace", "trace_problem", "has_device_activity",
           "no_trace_reason", "made_here", "memory_warnings")


def table_names() -> list[str]:
    """The Report's tables: every ``read_only_table`` it declares."""
    from nbprofiler.report.read_only import read_only_table
    from nbprofiler.report.report import Report

    return sorted(name for name, member in vars(Report).items() if isinstance(member, read_only_table))


def _text(value: Any) -> str:
    """A value as text that changes exactly when the value does (floats at full precision)."""
    if isinstance(value, pd.DataFrame):
        return f"{value.shape} {list(map(str, value.dtypes))}\n{value.to_csv()}"
    if isinstance(value, pd.Series):
        return f"{value.dtype}\n{value.to_csv()}"
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, sort_keys=True, default=repr, indent=1)
    return repr(value)


def _attempt(read: Callable[[], Any]) -> str:
    """``read()`` as text, or the error it raised (an absent table is part of the behaviour)."""
    try:
        return _text(read())
    except Exception as exc:  # noqa: BLE001 - an error is an artefact like any other
        return f"raised {type(exc).__name__}: {exc}"


def _suggestion(suggestion: Any) -> str:
    fields = getattr(suggestion, "__dataclass_fields__", None)
    if fields is None:
        return repr(suggestion)
    return json.dumps({name: getattr(suggestion, name) for name in fields}, sort_keys=True, default=repr, indent=1)


def _widget(widget: Any, depth: int = 0) -> Iterator[str]:
    """The explorer as a user sees it: each widget's kind and what it shows, children indented."""
    shown = {key: getattr(widget, key) for key in ("description", "value", "options", "titles", "placeholder",
                                                   "tooltip", "disabled")
             if widget.has_trait(key)}
    yield "  " * depth + f"{type(widget).__name__} {json.dumps(shown, sort_keys=True, default=repr)}"
    for child in getattr(widget, "children", ()):
        yield from _widget(child, depth + 1)


def _explorer(report: Any) -> dict[str, str]:
    explorer = report.explorer()
    out = {}
    for index, title in enumerate(explorer.tab_titles):
        explorer.show_tab(title)
        out[f"explorer/{title}"] = "\n".join(_widget(explorer.tabs.children[index]))
    return out


def report_artefacts(report: Any) -> dict[str, str]:
    """Every artefact of one report, by name."""
    from nbprofiler.render.payload import report_payload

    out = {f"table/{name}": _attempt(partial(getattr, report, name)) for name in table_names()}
    out |= {f"table/{name}": _attempt(partial(call, report)) for name, call in _CALLS.items()}
    out |= {f"value/{name}": _attempt(partial(getattr, report, name)) for name in _VALUES}
    out |= {f"suggestion/{i}": _suggestion(s) for i, s in enumerate(report.suggestions)}
    out["text"] = _attempt(report.to_text)
    out["html"] = _attempt(report.to_html)
    out["payload"] = _attempt(lambda: report_payload(report))
    out["repr"] = repr(report)
    out |= _explorer(report)
    return out


def comparison_artefacts(comparison: Any) -> dict[str, str]:
    from nbprofiler.render.bundle import comparison_mimebundle

    out = {f"value/{name}": _attempt(partial(getattr, comparison, name))
           for name in dir(type(comparison)) if not name.startswith("_")
           and isinstance(getattr(type(comparison), name), property)}
    widget = {"application/vnd.jupyter.widget-view+json"}
    out["bundle"] = _attempt(lambda: comparison_mimebundle(comparison, exclude=widget))
    return out


def _saved_runs() -> list[Path]:
    return sorted(GOLDEN.glob("*.nbprof"))


def subjects() -> Iterator[tuple[str, Callable[[], dict[str, str]]]]:
    """(name, how to make its artefacts) for every report the dump holds fixed."""
    import nbprofiler
    from nbprofiler.report.report import Report

    def loaded(path: Path) -> dict[str, str]:
        return report_artefacts(nbprofiler.load(path))

    for path in sorted(TRACES.glob("*.pt.trace.json.gz")):
        yield f"trace/{path.name.split('.')[0]}", partial(loaded, path)

    def comparison() -> dict[str, str]:
        before, after = (nbprofiler.load(TRACES / f"v100_resnet50_train_num_workers_{n}.pt.trace.json.gz")
                         for n in (0, 4))
        return comparison_artefacts(nbprofiler.compare(before, after))

    yield "compare/v100_num_workers_0_4", comparison

    def ranks() -> dict[str, str]:
        """The real 2-rank NCCL trace as ranks 0 to 2 of one run, rank 1 a straggler (as
        bench/many_ranks.py writes them), and rank 1's whole report."""
        from many_ranks import write_ranks

        folder = Path("ranks").resolve()
        write_ranks(TRACES / "a100_nccl_distributed.pt.trace.json.gz", folder, 3, 1)
        report = nbprofiler.load(folder)
        out = report_artefacts(report) | {f"rank1/{k}": v for k, v in report_artefacts(report.rank(1)).items()}
        return {name: text.replace(str(folder), "<ranks>") for name, text in out.items()}

    yield "ranks/a100_nccl_3_ranks", ranks
    for path in _saved_runs():
        yield f"saved/{path.stem}", partial(loaded, path)

        def live(path: Path = path) -> dict[str, str]:
            saved = nbprofiler.load(path)
            assert saved.run is not None, f"{path} holds no live run"
            return report_artefacts(Report.from_live(None, saved.run, saved.raw_trace))

        yield f"live/{path.stem}", live


# What changes from one dump to the next by design: a live report's random token (which "Try it"
# sends back), the time a report was shown, and export names stamped with the time.
_OF_THE_MOMENT = (
    (re.compile(r'(report_token\\?": \\?"|data-nbp-report=\\?")[0-9a-f]{32}'), r"\1<token>"),
    (re.compile(r'("when\\?": \\?")[0-9T:+-]{25}'), r"\1<now>"),
    (re.compile(r"_\d{8}-\d{6}(-\d+)?"), "_<now>"),
)


def _portable(text: str) -> str:
    """The text with this checkout's location and the moment's values replaced, so that every
    clone dumps the same at any time."""
    text = text.replace(str(REPO), "<repo>")
    for pattern, placeholder in _OF_THE_MOMENT:
        text = pattern.sub(placeholder, text)
    return text


def artefacts(subject: Callable[[], dict[str, str]]) -> dict[str, str]:
    """The subject's artefacts, made in an empty folder of their own: the export tab names files
    that do not exist yet in the current folder."""
    with tempfile.TemporaryDirectory() as folder, contextlib.chdir(folder):
        return {name: _portable(text) for name, text in subject().items()}


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _record() -> None:
    """Record the three live CPU runs of the dump (see golden_runs.py)."""
    from golden_runs import record

    GOLDEN.mkdir(parents=True, exist_ok=True)
    for path in record(GOLDEN):
        print("recorded", path.relative_to(REPO), path.stat().st_size, "bytes")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dump", type=Path, help="write every artefact under this folder")
    parser.add_argument("--write", action="store_true", help="renew tests/data/golden/digests.json")
    parser.add_argument("--record", action="store_true", help="record the live runs again")
    args = parser.parse_args()
    if args.record:
        _record()
    if not (args.dump or args.write):
        return
    digests = {}
    for name, subject in subjects():
        for artefact, text in artefacts(subject).items():
            digests[f"{name}/{artefact}"] = digest(text)
            if args.dump:
                out = args.dump / name / artefact.replace("/", "__")
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_text(text, encoding="utf-8", errors="surrogatepass")
        print(name, "done", flush=True)
    if args.write:
        DIGESTS.write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n")
        print("wrote", len(digests), "digests to", DIGESTS.relative_to(REPO))


if __name__ == "__main__":
    sys.path[:0] = [str(TESTS), str(REPO / "bench")]
    main()
