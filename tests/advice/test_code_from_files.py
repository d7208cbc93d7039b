"""A report made elsewhere never gets its maker's code into a suggestion, nor run by "Try it".

A report loaded from a ``.nbprof`` file or reloaded from the run history holds names and a cell
that whoever made it wrote. Each test records hostile text the way a run records names and
cells, saves the report and loads it back as a user would (``nbprofiler.load``), and uses every
suggestion's code as the user would: it compiles, the hostile text is nowhere in it, and run in
the notebook (the real IPython shell, holding the user's model, loader, ``os`` and
``subprocess``) it creates no marker file. Legitimate names and cells from a file still give
the code a report made in this kernel gives. The payload says which reports "Try it" may run.
"""
from __future__ import annotations

import gzip
import re
import textwrap
from pathlib import Path

import pandas as pd
import pytest
import soupsieve
import tinycss2
from bs4 import BeautifulSoup
from IPython.utils.capture import capture_output

import nbprofiler
from conftest import TRAIN_CELL, shared_report, shared_trace
from nbprofiler.options import ProfileOptions
from nbprofiler.records import LoaderRecord, RunRecord
from nbprofiler.render.payload import report_payload
from nbprofiler.render.style import STYLE
from nbprofiler.report import Report
from nbprofiler.trace.table import DeviceInfo

CPU = DeviceInfo(index=-1, name="CPU", kind="cpu", total_memory_bytes=16 * 2**30)
# Names a file can give a loader or a dataset, each runnable where it lands (an assignment's target, or
# the dataset argument): the payload hides past the card's edge, on lines of its own, or in an expression.
HOSTILE_NAMES = [
    "train_loader" + " " * 160 + ";__import__('os').system('touch {marker}');train_loader",
    "train_loader\n__import__('os').system('touch {marker}')\ntrain_loader",
    "train_ds if __import__('os').system('touch {marker}') else train_ds",
    "(__import__('os').system('touch {marker}'), train_ds)[1]",
]
# The notebook the code is pasted into: the user's objects under the names the cells use, and os.
NOTEBOOK = """
import os, subprocess
net, train_dl, dataset, loader = model, train_loader, train_ds, train_loader
xb, yb = next(iter(train_loader))
loss = F.cross_entropy(net(xb), yb)
total, history = 0.0, []
"""
# A cell whose training step also runs what its maker wrote: in the loss's statements (which the
# bf16 edit copies), in the loop (which the fp16 and accumulation edits copy, an IPython shell
# escape among them), and a model name that reaches Python's internals.
HOSTILE_CELL = """\
__builtins__.train()
for xb, yb in train_dl:
    logits = 0 * len(str(torch.os.system("touch {marker}"))) + net(xb)
    loss = F.cross_entropy(logits, yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
    !touch {marker}
    __import__("os").system("touch {marker}")
"""
# The same step with nothing but the user's names: from a file, its edits are still given.
CELL = """\
for xb, yb in train_dl:
    logits = net(xb)
    loss = F.cross_entropy(logits, yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


@pytest.fixture()
def marker(tmp_path) -> Path:
    """The file the hostile code would create."""
    return tmp_path / "pwned"


@pytest.fixture()
def notebook(shell):
    shell.run_cell(NOTEBOOK).raise_error()
    return shell


@pytest.fixture(scope="module")
def traces() -> dict[str, tuple[Report, bytes]]:
    """Real GPU traces: their reports (for the live runs' tables) and their raw bytes (for saving)."""
    names = ["v100_resnet50_train_num_workers_4", "a100_nccl_distributed", "a100_train"]
    return {n: (shared_report(n), gzip.decompress(shared_trace(n).read_bytes())) for n in names}


def loaded(report: Report, tmp_path: Path) -> Report:
    """``report`` as another user gets it: saved to a ``.nbprof`` file and loaded from it."""
    path = tmp_path / "run1.nbprof"
    report.save(path)
    return nbprofiler.load(path)


def loader_record(name: str | None, dataset_name: str | None, dataset_type: str = "ImageFolder") -> LoaderRecord:
    """A loader that kept every step waiting 20 ms, without workers, and passed no other argument."""
    return LoaderRecord(loader_id=1, batch_size=64, num_workers=0, pin_memory=False, persistent_workers=False,
                        prefetch_factor=None, drop_last=False, shuffle=True, dataset_type=dataset_type,
                        dataset_length=100_000, dataset_repr=dataset_type, name=name, dataset_name=dataset_name,
                        batches=12, wait_ms_by_step={i: 20.0 for i in range(12)}, wait_cpu_ms=240.0, passed_on=())


def cpu_run(loader: LoaderRecord) -> Report:
    """A CPU run that waits for ``loader`` half of each 40 ms step: the DataLoader rule fires."""
    steps = pd.DataFrame({"step": range(12), "phase": "active", "wall_ms": 40.0, "dataloader_ms": 20.0,
                          "rss_bytes": 1e9})
    return Report.from_live(None, RunRecord(options=ProfileOptions(), device=CPU, steps=steps, loaders=(loader,),
                                            step_source="optimizer", cpu_count=8), None)


def gpu_run(traces, name: str, steps: pd.DataFrame, cc: tuple[int, int], cell: str | None = None,
            loaders: tuple[LoaderRecord, ...] = ()) -> Report:
    """A live run of a real GPU trace, with ``steps`` (memory counters where a rule needs them)."""
    trace, raw = traces[name]
    device = DeviceInfo(index=0, name="NVIDIA GPU", kind="cuda", total_memory_bytes=40 * 2**30, compute_capability=cc)
    record = RunRecord(options=ProfileOptions(), device=device, steps=steps.reset_index(drop=True), loaders=loaders,
                       step_source="optimizer", cell_source=cell, cpu_count=8)
    return Report.from_live(trace.table, record, raw)


def memory_steps(static_gb: float, peak_gb: float, grows_mb: float = 0.0, n: int = 8) -> pd.DataFrame:
    return pd.DataFrame({"step": range(n), "phase": "active", "wall_ms": 220.0, "dataloader_ms": 0.0,
                         "mem_allocated_bytes": [static_gb * 2**30 + i * grows_mb * 2**20 for i in range(n)],
                         "mem_peak_bytes": [peak_gb * 2**30 + i * grows_mb * 2**20 for i in range(n)],
                         "mem_reserved_bytes": 2 * peak_gb * 2**30})


def v100_steps(traces) -> pd.DataFrame:
    """The trace's profiled steps as the live sampler numbers them: every step the cell ran, from 0."""
    return numbered_from_zero(traces["v100_resnet50_train_num_workers_4"][0].steps)


def numbered_from_zero(trace_steps: pd.DataFrame) -> pd.DataFrame:
    """A trace's steps (numbered as its ProfilerStep#N) behind the unprofiled steps before them."""
    active = trace_steps[["step", "phase", "wall_ms", "dataloader_ms"]]
    before = pd.DataFrame({"step": range(int(active["step"].min())), "phase": "wait",
                           "wall_ms": float(active["wall_ms"].mean()), "dataloader_ms": 0.0})
    return pd.concat([before, active], ignore_index=True)


def assert_runs_nothing_of_theirs(notebook, report: Report, marker: Path, *theirs: str) -> list[str]:
    """Every suggestion's code, pasted into the notebook, runs without creating ``marker``, compiles
    and holds none of ``theirs``; the kinds of the suggestions with code."""
    coded = [s for s in report.suggestions if s.code]
    for s in coded:
        assert s.code is not None
        with capture_output():
            result = notebook.run_cell(s.code)
        assert not marker.exists(), (s.kind, s.code)
        assert result.success, (s.kind, s.code, result.error_in_exec)
        compile(textwrap.dedent(s.code), s.kind, "exec")  # as indented in the cell it edits
        assert not [text for text in (str(marker), *theirs) if text in s.code], (s.kind, s.code)
    return [s.kind for s in coded]


# -- names ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("hostile", HOSTILE_NAMES)
@pytest.mark.parametrize("dataset_type", ["ImageFolder", "TensorDataset"])  # workers, or a BatchSampler
def test_a_files_loader_and_dataset_names_never_reach_code(notebook, tmp_path, marker, hostile, dataset_type):
    name = hostile.format(marker=marker)
    for loader, dataset in [(name, "train_ds"), ("train_loader", name), (name, name)]:
        report = loaded(cpu_run(loader_record(loader, dataset, dataset_type)), tmp_path)
        assert assert_runs_nothing_of_theirs(notebook, report, marker, "__import__") == ["dataloader"]
        code = report.suggestions[0].code
        if loader == name:  # the generic name stands in, and a comment asks for the user's
            assert ("# the report's name for this DataLoader is not a Python name: put yours in place of `loader`\n"
                    in code and "\nloader = DataLoader(" in code)
        else:  # the loader's own name is fine: its dataset is reached through it
            assert "train_loader = DataLoader(" in code and "train_loader.dataset" in code


def test_a_files_names_never_reach_the_gpu_suggestions_code(traces, notebook, tmp_path, marker):
    """The larger batch, and accumulation with the loader's smaller batch, name the loader too."""
    name, dataset = (h.format(marker=marker) for h in HOSTILE_NAMES[:2])
    kinds = []
    for static_gb, peak_gb in [(2.0, 6.0), (10.0, 38.0)]:  # headroom and an idle GPU; 95% of the device
        run = gpu_run(traces, "a100_nccl_distributed", memory_steps(static_gb, peak_gb), (8, 0),
                      loaders=(loader_record(name, dataset),))
        kinds += assert_runs_nothing_of_theirs(notebook, loaded(run, tmp_path), marker, "__import__")
    assert {"batch_size", "memory_near_limit"} <= set(kinds)


@pytest.mark.parametrize("loader, dataset", [("train_loader", "train_ds"), ("self.loader", "data.train_ds"),
                                             ("match", "type")])  # soft keywords are names
def test_a_files_python_names_give_the_code_this_kernel_gives(tmp_path, loader, dataset):
    live = cpu_run(loader_record(loader, dataset))
    code = loaded(live, tmp_path).suggestions[0].code
    assert code == live.suggestions[0].code
    assert code.startswith(f"{loader} = DataLoader(\n    {dataset},\n    batch_size=64,")
    compile(code, "dataloader", "exec")


# -- the cell's lines --------------------------------------------------------------------------------
@pytest.mark.parametrize("cc", [(7, 0), (8, 0)])  # fp16 edits the loop, bf16 the loss's statements
def test_a_files_cell_never_reaches_the_autocast_code(traces, notebook, tmp_path, marker, monkeypatch, cc):
    import torch

    monkeypatch.setattr(torch.backends.cudnn, "benchmark", False)  # the conv code sets it: restored after
    cell = HOSTILE_CELL.format(marker=marker)
    report = loaded(gpu_run(traces, "v100_resnet50_train_num_workers_4", v100_steps(traces), cc, cell), tmp_path)
    kinds = assert_runs_nothing_of_theirs(notebook, report, marker, "__import__", "__builtins__", "touch")
    assert {"amp", "conv"} <= set(kinds)
    amp = next(s for s in report.suggestions if s.kind == "amp")
    assert amp.code.startswith("# this report's cell came from a file and uses names its code may not copy: in "
                               "yours, compute the forward pass")
    assert all(line.startswith("#") for line in amp.code.splitlines()) and "line" not in amp.evidence
    conv = next(s for s in report.suggestions if s.kind == "conv")
    assert "if \"model\" in globals():  # put your nn.Module's name in place of `model`" in conv.code


def test_a_files_cell_never_reaches_the_accumulation_code(traces, notebook, tmp_path, marker):
    cell = HOSTILE_CELL.format(marker=marker)
    run = gpu_run(traces, "a100_nccl_distributed", memory_steps(10.0, 38.0), (8, 0), cell,
                  loaders=(loader_record("train_dl", "train_ds"),))
    report = loaded(run, tmp_path)
    assert "memory_near_limit" in assert_runs_nothing_of_theirs(notebook, report, marker, "__import__", "touch")
    s = next(s for s in report.suggestions if s.kind == "memory_near_limit")
    assert s.code.startswith("# this report's cell came from a file and uses names its code may not copy: in "
                             "yours, accumulate gradients over 2 batches")
    assert "#     batch_size=32,  # changed: was 64" in s.code  # the loader's own call, to edit by hand


def test_a_files_cell_of_plain_names_gives_the_edits_this_kernel_gives(traces, tmp_path):
    for name, steps, cc, kind in [("v100_resnet50_train_num_workers_4", v100_steps(traces), (7, 0), "amp"),
                                  ("v100_resnet50_train_num_workers_4", v100_steps(traces), (8, 0), "amp"),
                                  ("a100_nccl_distributed", memory_steps(10.0, 38.0), (8, 0), "memory_near_limit")]:
        live = next(s for s in gpu_run(traces, name, steps, cc, CELL).suggestions if s.kind == kind)
        from_file = next(s for s in loaded(gpu_run(traces, name, steps, cc, CELL), tmp_path).suggestions
                         if s.kind == kind)
        assert "line" in live.evidence and (from_file.code, from_file.evidence) == (live.code, live.evidence)


@pytest.mark.parametrize("kept, fixed", [
    ("history.append(loss)", "    history.append(loss.detach())"),
    ('history.append(loss); torch.os.system("touch {marker}")', None),
])
def test_the_leak_fix_copies_a_files_line_only_where_it_computes(traces, notebook, tmp_path, marker, kept, fixed):
    cell = CELL + f"    {kept.format(marker=marker)}\n"
    report = loaded(gpu_run(traces, "a100_train", memory_steps(1.0, 2.0, grows_mb=64, n=12), (8, 0), cell), tmp_path)
    growth = next(s for s in report.suggestions if s.kind == "memory_growth")
    assert growth.evidence["line"] == 7 and growth.code == fixed
    if fixed is None:  # the fixes in words
        assert ".item()" in growth.detail and ".detach()" in growth.detail
    assert_runs_nothing_of_theirs(notebook, report, marker, "touch")


# -- the rule ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, ok", [
    ("train_loader", True), ("self.loader", True), ("data.train_ds", True), ("_loader", True), ("match", True),
    ("train loader", False), ("loader;x", False), ("loader\nx", False), ("class", False), ("a.None", False),
    ("__builtins__", False), ("x.__class__", False), ("ｅｘｅｃ", False), ("données", False), ("1x", False),
    ("a..b", False), ("", False),
])
def test_a_name_goes_into_code_only_as_ascii_python_names(text, ok):
    from nbprofiler.advice.safe_names import code_name

    assert code_name(text) == (text if ok else None)


COMPUTES = ["loss = F.cross_entropy(net(xb), yb)", "for i, (x, y) in enumerate(self.loader):\n    out = model.eval()",
            "with torch.no_grad():\n    total += loss.item()", "history.append(loss.detach())",
            "writer.add_scalar('loss', loss.item(), i)", "for _ in range(3):\n    x = x.type(torch.float16)",
            "    logits = net(xb)\n    loss = lf(logits, yb)"]
REACHES = ['__import__("os").system("x")', 'torch.os.system("x")', 'ｏｓ.system("x")', 'exec("x")', 'eval("1")',
           'compile("1", "", "eval")', 'getattr(torch, "o" + "s")', 'vars(x)', 'y = x.__class__', 'torch._C',
           'open("f", "w").close()', 'subprocess.run(["x"])', '(lambda: 0)()', 'import os', 'def f():\n    pass',
           '(x for x in ()).gi_frame.f_globals', 'np.load("f.npy", allow_pickle=True)', 'torch.load("x")',
           'torch.hub.load("a/b", "c")', 'model.save_pretrained("d")', 'np.savetxt("f", x)', 'pd.read_csv("x")',
           'logging.config.dictConfig({})', 'dist.broadcast_object_list(objs)', 'display(HTML("<b>"))',
           '!touch x', '%system touch x', 'x = 1\x0cy = 2']


@pytest.mark.parametrize("lines, ok", [(c, True) for c in COMPUTES] + [(r, False) for r in REACHES])
def test_a_files_lines_are_copied_only_where_they_compute(lines, ok):
    from nbprofiler.advice.safe_names import copyable

    source = f"x = 0\n{lines}\ny = 1\n"
    assert copyable(source, 2, 1 + len(lines.splitlines())) is ok


def test_text_quoted_in_code_starts_no_line_of_code(marker):
    from nbprofiler.advice.safe_names import commented

    text = f"total += x\nopen({str(marker)!r}, 'w')\rprint(1)\u2028open({str(marker)!r}, 'w')"
    code = commented(text)
    assert all(line.startswith("# ") for line in re.split(r"\r\n|\r|\n", code))
    exec(compile(code, "comment", "exec"), {})
    assert not marker.exists()


# -- the payload: which reports "Try it" may run ----------------------------------------------------
SAVED = "this report was loaded from a saved report file"
STORED = "this report was reloaded from the run history"
TRACED = "this report was loaded from the trace file v100_resnet50_train_num_workers_0.pt.trace.json.gz"


def test_only_a_live_run_of_this_kernel_carries_a_token_it_confirms(shell, tmp_path, monkeypatch):
    from nbprofiler.render import origin

    monkeypatch.setenv("NBPROFILER_HISTORY", str(tmp_path / "history.sqlite"))
    with capture_output():
        shell.run_cell_magic("torchprofile", "-q -o run", TRAIN_CELL)
    live = shell.user_ns["run"]
    payload = report_payload(live)
    assert payload["made_here"] is True and payload["origin"] is None
    token = payload["report_token"]
    assert origin.made_here(token) and report_payload(live)["report_token"] == token  # the same on each rendering
    run_id = int(nbprofiler.history(cell=live)["run_id"].iloc[-1])
    for report, words in [(loaded(live, tmp_path), SAVED), (nbprofiler.stored_run(run_id), STORED),
                          (shared_report("v100_resnet50_train_num_workers_0"), TRACED)]:
        payload = report_payload(report)
        assert (payload["made_here"], payload["report_token"], payload["origin"]) == (False, None, words)
    # A token this process did not issue, or not a token at all, is not one of its reports.
    assert not origin.made_here("0" * 32) and not origin.made_here(token.upper())
    assert not origin.made_here(f"{token}') or True or ('")
    # As the extension asks (labextension/src/try/card.ts, madeHereExpression): silently, through IPython.
    asked = "__import__('nbprofiler.render.origin', fromlist=['made_here']).made_here('{}')"
    answers = shell.user_expressions({"ours": asked.format(token), "other": asked.format("f" * 32)})
    assert [answers[k]["data"]["text/plain"] for k in ("ours", "other")] == ["True", "False"]


def test_the_try_it_button_carries_the_token_only_on_a_report_made_here(tmp_path, monkeypatch):
    """A card with code, of the same run made here, loaded from a file, reloaded from the history."""
    monkeypatch.setenv("NBPROFILER_HISTORY", str(tmp_path / "history.sqlite"))
    waiting = cpu_run(loader_record("train_loader", "train_ds"))
    kept = nbprofiler.history.keep(waiting, cell="waiting", notebook="run.ipynb")
    token = report_payload(waiting)["report_token"]
    for report, words in [(waiting, None), (loaded(waiting, tmp_path), SAVED), (nbprofiler.stored_run(kept), STORED),
                          (shared_report("v100_resnet50_train_num_workers_0"), TRACED)]:
        page = report.to_html()
        buttons = re.findall(r'<button class="nbp-try"[^>]*>', page)
        assert buttons and len(buttons) == len([s for s in report.suggestions if s.code and not s.guidance])
        expected = f'data-nbp-report="{token}"' if words is None else f'data-nbp-origin="{words}"'
        assert all(expected in b and ("data-nbp-report" in b) == (words is None) for b in buttons), buttons


def test_the_html_cards_code_wraps_within_the_card(tmp_path):
    """A line longer than the card wraps in nbprofiler's HTML: nothing of the code hides past its edge."""
    page = loaded(cpu_run(loader_record(HOSTILE_NAMES[0], "train_ds")), tmp_path).to_html()
    soup = BeautifulSoup(page, "html.parser")
    codes = soup.select(".nbp .card pre")
    assert codes
    for pre in codes:
        assert declared(pre, "white-space") == "pre-wrap" and declared(pre, "overflow-wrap") == "anywhere"


def declared(element, prop: str) -> str | None:
    """The value of ``prop`` that STYLE gives ``element``: the last of the most specific rules that match."""
    found: list[tuple[tuple[int, int, int], int, str]] = []
    for order, rule in enumerate(tinycss2.parse_stylesheet(STYLE, skip_whitespace=True, skip_comments=True)):
        if rule.type != "qualified-rule":
            continue
        values = {d.lower_name: tinycss2.serialize(d.value).strip()
                  for d in tinycss2.parse_declaration_list(rule.content, skip_whitespace=True, skip_comments=True)
                  if d.type == "declaration"}
        if prop not in values:
            continue
        for selector in tinycss2.serialize(rule.prelude).split(","):
            try:
                matches = soupsieve.match(selector.strip(), element)
            except soupsieve.SelectorSyntaxError:  # a pseudo-element (::before): never the <pre> itself
                continue
            if matches:
                found.append((_specificity(selector), order, values[prop]))
    return max(found)[2] if found else None


def _specificity(selector: str) -> tuple[int, int, int]:
    return (selector.count("#"), len(re.findall(r"[.:\[]", selector)),
            len(re.findall(r"(?:^|[\s>+~])[a-z]", selector.strip())))


def test_a_range_a_trace_names_like_a_cell_line_is_no_line_of_the_cell(traces, tmp_path):
    """The sync advice places a sync on "cell line N" from the trace's names: a file's range named
    so, past the cell's end, is a range, and the advice still shows, with the fix's pattern."""
    trace, raw = traces["a100_train"]
    renamed = raw.replace(b"## all2all_tw_data:init ##", b"cell line 9999: all2all")
    assert renamed != raw
    record = RunRecord(options=ProfileOptions(), device=trace.device, steps=numbered_from_zero(trace.steps),
                       loaders=(), step_source="optimizer", cell_source=CELL, cpu_count=8)
    sync = next(s for s in loaded(Report.from_live(None, record, renamed), tmp_path).suggestions if s.kind == "sync")
    assert sync.evidence["top_where"].startswith("cell line 9999: all2all") and "line" not in sync.evidence
    assert all(line.startswith("#") for line in sync.code.splitlines())
