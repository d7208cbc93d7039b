"""%%torchprofile through a real IPython shell on real small training loops."""
from __future__ import annotations

import gzip
import json

import pytest
import torch
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

import nbprofiler
from conftest import TRAIN_CELL, assert_nothing_left

MIME = "application/vnd.nbprofiler.report+json"


def run_magic(shell, line: str, cell: str):
    with capture_output() as captured:
        shell.run_cell_magic("torchprofile", line, cell)
    return captured


def test_optimizer_steps_define_the_schedule(shell):
    captured = run_magic(shell, "--active 3 -o run", TRAIN_CELL)
    run = shell.user_ns["run"]
    assert isinstance(run, nbprofiler.Report)
    steps = run.steps
    # 12 batches, 12 optimizer steps, every one of them sampled.
    assert list(steps["step"]) == list(range(12))
    assert list(steps["phase"][:5]) == ["wait", "warmup", "active", "active", "active"]
    assert set(steps["phase"][5:]) == {"none"}
    assert (steps["wall_ms"] > 0).all()
    assert (steps["rss_bytes"] > 0).all()
    assert run.run.step_source == "optimizer"
    # The trace holds exactly the three active steps, numbered like the sampler's.
    assert list(run.trace_steps["step"]) == [2, 3, 4]
    names = set(run.operators["name"])
    assert {"aten::addmm", "aten::relu", "Optimizer.step#SGD.step"} <= names
    assert not run.partial
    assert nbprofiler.last() is run
    # The output shown under the cell is one rich bundle with text, HTML and the data payload.
    bundle = captured.outputs[-1].data
    assert "nbprofiler report" in bundle["text/plain"]
    assert "aten::addmm" in bundle["text/html"]
    assert bundle[MIME]["schema"] == "nbprofiler.report/1"
    assert_nothing_left()


def test_operator_times_add_up(shell):
    run_magic(shell, "-q -o run", TRAIN_CELL)
    ops = shell.user_ns["run"].operators
    assert (ops["host_self_us"] <= ops["host_total_us"] + 1e-6).all()
    assert (ops["calls"] >= 1).all()
    # Self time sums to at most the time the profiled steps took.
    trace_steps = shell.user_ns["run"].trace_steps
    span = float((trace_steps["end_us"] - trace_steps["start_us"]).sum())
    assert ops["host_self_us"].sum() <= span * 1.01
    # addmm runs twice per forward (two Linear layers), in each of the 3 active steps.
    assert int(ops.loc[ops["name"] == "aten::addmm", "calls"].iloc[0]) == 6


def test_dataloader_batches_end_steps_without_an_optimizer(shell):
    cell = "for x, y in train_loader:\n    with torch.no_grad():\n        model(x)\n"
    run_magic(shell, "-q -o run --wait 0 --warmup 1 --active 2", cell)
    run = shell.user_ns["run"]
    assert run.run.step_source == "dataloader"
    assert len(run.steps) == 12  # each fetch (the last one raising StopIteration) ends the previous batch
    assert list(run.steps["phase"][:3]) == ["warmup", "active", "active"]
    loader = run.run.loaders[0]
    assert loader.name == "train_loader" and loader.dataset_name == "train_ds"
    assert loader.batch_size == 8 and loader.num_workers == 0 and loader.batches == 12
    assert (run.steps["dataloader_ms"] > 0).all()
    assert_nothing_left()


def test_manual_steps_ignore_the_optimizer(shell):
    cell = (
        "import nbprofiler\n"
        "for i, (x, y) in enumerate(train_loader):\n"
        "    loss = F.cross_entropy(model(x), y)\n"
        "    opt.zero_grad(); loss.backward(); opt.step()\n"
        "    if i % 2 == 1:\n"
        "        nbprofiler.step()\n"
    )
    run_magic(shell, "-q -o run --step-on manual --wait 0 --warmup 0 --active 2", cell)
    run = shell.user_ns["run"]
    assert len(run.steps) == 6  # 12 batches, a manual step every second one
    assert run.run.step_source == "manual"
    # Each recorded step holds two optimizer steps.
    ops = run.operators
    assert int(ops.loc[ops["name"] == "Optimizer.step#SGD.step", "calls"].iloc[0]) == 4


def test_iterations_run_the_body_n_times(shell):
    shell.run_cell("x0 = torch.randn(16, 20); calls = 0").raise_error()
    run_magic(shell, "-q -o run -n 6 --wait 1 --warmup 1 --active 2", "calls += 1\ny = model(x0)")
    run = shell.user_ns["run"]
    assert shell.user_ns["calls"] == 6
    assert list(run.steps["phase"]) == ["wait", "warmup", "active", "active", "none", "none"]
    assert run.run.step_source == "iterations"
    assert list(run.trace_steps["step"]) == [2, 3]


def test_gradient_accumulation_is_named_and_step_on_optimizer_fixes_it(shell):
    cell = ("for i, (x, y) in enumerate(train_loader):\n"
            "    (F.cross_entropy(model(x), y) / 4).backward()\n"
            "    if i % 4 == 3:\n"
            "        opt.step(); opt.zero_grad()\n")
    run_magic(shell, "-q -o auto", cell)
    auto = shell.user_ns["auto"]
    assert any("first 3 step(s) were ended by DataLoader batches" in n and "--step-on optimizer" in n
               for n in auto.notes)
    run_magic(shell, "-q -o opt_steps --step-on optimizer", cell)
    steps = shell.user_ns["opt_steps"]
    assert len(steps.steps) == 3 and steps.run.step_source == "optimizer"  # 12 batches, 4 per step
    assert not any("DataLoader batches" in n for n in steps.notes)


def test_line_magic_profiles_a_statement(shell):
    shell.run_cell("x0 = torch.randn(16, 20)").raise_error()
    with capture_output():
        shell.run_line_magic("torchprofile", "-q -o run -n 4 --wait 0 --warmup 0 --active 4 y = model(x0)")
    run = shell.user_ns["run"]
    assert len(run.steps) == 4 and "aten::addmm" in set(run.operators["name"])


def test_line_magic_statement_may_start_with_or_hold_a_minus(shell):
    """Everything from the first word that is not an option is the statement, verbatim."""
    shell.run_cell("x0 = torch.randn(16, 20)").raise_error()
    with capture_output():
        shell.run_line_magic("torchprofile", "-q -n 2 --wait=0 --warmup 0 y = -model(x0) - 1; s = 'a  -b'")
    assert torch.equal(shell.user_ns["y"], -shell.user_ns["model"](shell.user_ns["x0"]) - 1)
    assert shell.user_ns["s"] == "a  -b"
    with pytest.raises(UsageError, match="^%torchprofile: give a statement"):
        shell.run_line_magic("torchprofile", "-q --active 2")
    with pytest.raises(UsageError, match="^%torchprofile --active: must be a whole number"):
        shell.run_line_magic("torchprofile", "--active 0 y = model(x0)")
    assert_nothing_left()


def test_too_few_steps_still_report_what_ran(shell):
    cell = ("for i, (x, y) in enumerate(train_loader):\n"
            "    loss = F.cross_entropy(model(x), y)\n"
            "    opt.zero_grad(); loss.backward(); opt.step()\n"
            "    if i == 2: break\n")
    captured = run_magic(shell, "-o run --wait 1 --warmup 1 --active 5", cell)
    run = shell.user_ns["run"]
    assert len(run.steps) == 3
    assert run.partial
    assert list(run.trace_steps["step"]) == [2]  # the one active step that ran was recorded
    assert any("3 of the 7 steps" in n for n in run.notes)
    assert "3 of the 7 steps" in captured.outputs[-1].data["text/plain"]


def test_cell_ending_in_warmup_says_nothing_was_profiled(shell):
    cell = ("for i, (x, y) in enumerate(train_loader):\n"
            "    loss = F.cross_entropy(model(x), y)\n"
            "    opt.zero_grad(); loss.backward(); opt.step()\n"
            "    if i == 1: break\n")
    captured = run_magic(shell, "-o run --wait 1 --warmup 1 --active 3", cell)
    run = shell.user_ns["run"]
    assert len(run.trace_steps) == 0  # the step that had just begun is not a whole step
    assert len(run.steps) == 2
    text = captured.outputs[-1].data["text/plain"]
    assert "no step was profiled" in text and "--wait 0 --warmup 0" in text


def test_exception_in_step_3_shows_partial_report_and_raises(shell):
    cell = (
        "for i, (x, y) in enumerate(train_loader):\n"
        "    if i == 3:\n"
        "        raise ValueError('bad batch 3')\n"
        "    loss = F.cross_entropy(model(x), y)\n"
        "    opt.zero_grad(); loss.backward(); opt.step()\n"
    )
    with capture_output() as captured:
        with pytest.raises(ValueError, match="bad batch 3") as info:
            shell.run_cell_magic("torchprofile", "-o run --wait 0 --warmup 1 --active 3", cell)
    run = shell.user_ns["run"]
    assert run.partial and run.run.error == "ValueError: bad batch 3"
    assert len(run.steps) == 3
    assert list(run.trace_steps["step"]) == [1, 2]  # steps 1 and 2 were active and completed
    assert "Partial report" in captured.outputs[-1].data["text/plain"]
    # The user's own traceback: the innermost frame is the cell's raise.
    tb = info.value.__traceback__
    while tb.tb_next:
        tb = tb.tb_next
    assert tb.tb_frame.f_code.co_filename == run.run.cell_filename
    assert_nothing_left()
    # The next profiled cell works normally.
    run_magic(shell, "-q -o run2", TRAIN_CELL)
    assert len(shell.user_ns["run2"].steps) == 12 and not shell.user_ns["run2"].partial


def test_keyboard_interrupt_is_reraised_after_cleanup(shell):
    cell = (
        "for i, (x, y) in enumerate(train_loader):\n"
        "    loss = F.cross_entropy(model(x), y)\n"
        "    opt.zero_grad(); loss.backward(); opt.step()\n"
        "    if i == 3:\n"
        "        raise KeyboardInterrupt\n"
    )
    with capture_output():
        with pytest.raises(KeyboardInterrupt):
            shell.run_cell_magic("torchprofile", "-q -o run --wait 0 --warmup 0 --active 10", cell)
    run = shell.user_ns["run"]
    assert run.run.error == "KeyboardInterrupt" and run.partial
    assert len(run.steps) == 4 and list(run.trace_steps["step"]) == [0, 1, 2, 3]
    assert_nothing_left()


@pytest.mark.parametrize(
    "line, option",
    [("--active 0", "--active"), ("--step-on x", "--step-on"), ("--device tpu", "--device"),
     ("--wait -1", "--wait"), ("--sort nope", "--sort"), ("--trace out.txt", "--trace"),
     ("-n 0", "--iterations"), ("--active three", "--active")],
)
def test_bad_options_give_a_one_line_usage_error(shell, line, option):
    with pytest.raises(UsageError) as info:
        shell.run_cell_magic("torchprofile", line, TRAIN_CELL)
    message = str(info.value)
    assert option.lstrip("-").split("-")[0] in message and "\n" not in message
    assert_nothing_left()


def test_nesting_is_refused(shell):
    inner = "get_ipython().run_cell_magic('torchprofile', '-q', 'y = model(torch.randn(2, 20))')"
    with capture_output():
        with pytest.raises(UsageError, match="cannot be nested"):
            shell.run_cell_magic("torchprofile", "-q -n 1", inner)
    assert_nothing_left()
    with torch.profiler.profile():
        with pytest.raises(UsageError, match="another torch profiler is running"):
            shell.run_cell_magic("torchprofile", "-q", TRAIN_CELL)
    assert_nothing_left()


def test_trace_and_tensorboard_outputs(shell, tmp_path):
    trace = tmp_path / "run.pt.trace.json.gz"
    tb = tmp_path / "tb"
    run_magic(shell, f"-q -o run --trace {trace} --tensorboard {tb}", TRAIN_CELL)
    data = json.loads(gzip.decompress(trace.read_bytes()))
    names = {e.get("name") for e in data["traceEvents"]}
    assert {"ProfilerStep#2", "ProfilerStep#4", "aten::addmm"} <= names
    tb_files = list(tb.glob("*.pt.trace.json"))
    assert len(tb_files) == 1
    # Both read back into the same operator table as the live report.
    live_ops = shell.user_ns["run"].operators.set_index("name")["calls"]
    for path in (trace, tb):
        loaded = nbprofiler.load(path).operators.set_index("name")["calls"]
        assert loaded.to_dict() == live_ops.to_dict()


def test_help_text_is_the_docstring(ip):
    doc = ip.find_cell_magic("torchprofile").__doc__
    assert "Examples" in doc and "--active" in doc and "--step-on" in doc and "-o VAR" in doc


def test_shapes_group_operators_by_input_shape(shell):
    run_magic(shell, "-q -o run --shapes", TRAIN_CELL)
    ops = shell.user_ns["run"].operators
    assert "input_shapes" in ops.columns
    addmm = ops[ops["name"] == "aten::addmm"]
    # Two Linear layers: two distinct shape signatures for addmm, 3 calls each in 3 active steps.
    assert len(addmm) == 2 and set(addmm["calls"]) == {3}
    assert any("[8, 20]" in s for s in addmm["input_shapes"])


def test_sort_and_top_shape_the_shown_table(shell):
    captured = run_magic(shell, "-o run --sort calls --top 3", TRAIN_CELL)
    run = shell.user_ns["run"]
    # What is shown: three rows, most calls first.
    text = captured.outputs[-1].data["text/plain"]
    assert f"Top operators (3 of {len(run.operators)})" in text
    html_rows = captured.outputs[-1].data["text/html"].split("Top operators", 1)[1].split("</table>", 1)[0]
    assert html_rows.count("<tr>") - 1 == 3
    # What is saved for the extension: every operator, in the same order, so it can re-sort and filter.
    saved = captured.outputs[-1].data[MIME]["operators"]
    calls = [row[saved["columns"].index("calls")] for row in saved["rows"]]
    assert len(calls) == len(run.operators) and calls == sorted(calls, reverse=True)
    assert calls[0] == run.operators["calls"].max()


def test_a_cell_that_profiled_no_step_claims_nothing_about_improvements(shell):
    cell = ("for i, (x, y) in enumerate(train_loader):\n"
            "    loss = F.cross_entropy(model(x), y)\n"
            "    opt.zero_grad(); loss.backward(); opt.step()\n"
            "    if i == 1: break\n")
    run_magic(shell, "-q -o run --wait 1 --warmup 1 --active 3", cell)
    kinds = {s.kind for s in shell.user_ns["run"].suggestions}
    assert "nothing_to_improve" not in kinds


def test_repeated_cycles_keep_the_last_trace_and_say_so(shell):
    run_magic(shell, "-q -o run --wait 0 --warmup 1 --active 2 --repeat 3", TRAIN_CELL)
    run = shell.user_ns["run"]
    assert list(run.steps["phase"][:9]) == ["warmup", "active", "active"] * 3
    assert list(run.trace_steps["step"]) == [7, 8]  # the third cycle's active steps
    assert any("3 cycles were recorded" in n for n in run.notes)


def test_paths_with_spaces_are_given_in_quotes(shell, tmp_path):
    trace, tb = tmp_path / "my runs" / "a b.json", tmp_path / "tb dir"
    run_magic(shell, f'-q -o run --trace "{trace}" --tensorboard \'{tb}\'', TRAIN_CELL)
    assert nbprofiler.load(trace).operators["calls"].sum() > 0
    assert len(list(tb.glob("*.pt.trace.json"))) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["my runs", "tb dir"]  # no folder named '"' or "'"
    # The line magic splits its options the same way, and its statement starts after the quoted value.
    shell.run_cell("x0 = torch.randn(16, 20)").raise_error()
    line_trace = tmp_path / "line trace.json.gz"
    with capture_output():
        shell.run_line_magic("torchprofile",
                             f'-q -n 2 --wait 0 --warmup 0 --active 2 --trace "{line_trace}" y = model(x0)')
    assert line_trace.stat().st_size > 0 and shell.user_ns["y"].shape == (16, 4)
    with pytest.raises(UsageError, match="^%%torchprofile: No closing quotation"):
        shell.run_cell_magic("torchprofile", f'-q --trace "{trace}', TRAIN_CELL)
    assert_nothing_left()


@pytest.mark.parametrize("magic, line", [("cell", "-h"), ("cell", "--active 2 --help"), ("line", "-h calls += 1")])
def test_help_flag_shows_the_help_and_runs_nothing(shell, magic, line):
    shell.run_cell("calls = 0").raise_error()
    with capture_output() as captured:
        if magic == "cell":
            shell.run_cell_magic("torchprofile", line, "calls += 1")
        else:
            shell.run_line_magic("torchprofile", line)
    assert "Profile a notebook cell under torch.profiler" in captured.stdout
    assert "--active ACTIVE" in captured.stdout and "-o VAR, --output VAR" in captured.stdout
    assert shell.user_ns["calls"] == 0 and not captured.outputs


@pytest.mark.parametrize("name", ["class", "None", "lambda", "x y", "1x"])
def test_output_must_be_a_variable_name(shell, name):
    with pytest.raises(UsageError, match=f"^%%torchprofile -o: {name!r} is not a valid variable name$"):
        shell.run_cell_magic("torchprofile", f"-q -o '{name}'", TRAIN_CELL)


def test_numpy_integers_are_whole_numbers(shell):
    import numpy as np

    shell.user_ns["np"] = np
    shell.run_cell("import nbprofiler\n"
                   "with nbprofiler.profile(wait=np.int64(0), warmup=np.int32(0), active=np.int64(2)) as run:\n"
                   "    for x, y in train_loader:\n"
                   "        F.cross_entropy(model(x), y).backward(); opt.step()\n").raise_error()
    run = shell.user_ns["run"].report
    assert run.run.options.active == 2 and type(run.run.options.active) is int
    assert list(run.trace_steps["step"]) == [0, 1]
    for bad in (True, np.float64(2.0)):
        with pytest.raises(nbprofiler.OptionError, match="--active: must be a whole number >= 1"):
            nbprofiler.ProfileOptions(active=bad)


def test_repeat_0_shows_no_torch_warning(shell, monkeypatch):
    import warnings

    import torch.profiler.profiler as torch_profiler

    monkeypatch.setattr(torch_profiler, "_WARNINGS_SHOWN", set())  # torch warns once per process
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # pyproject's filter for the test suite is not the user's
        run_magic(shell, "-q -o run --wait 0 --warmup 0 --active 2 --repeat 0", TRAIN_CELL)
    assert any("cycles were recorded" in n for n in shell.user_ns["run"].notes)
    assert [str(w.message) for w in caught if "clears events" in str(w.message)] == []


def test_a_failing_cell_shows_its_own_frames(shell):
    """The traceback IPython displays goes from the cell's line to the raise, with no
    frame of nbprofiler in between."""
    shell.run_cell("def check(x):\n    raise ValueError(f'bad value {x}')\n").raise_error()
    with capture_output() as captured:
        result = shell.run_cell("%%torchprofile -q -n 2\nx = 1\ncheck(x)\n")
    assert isinstance(result.error_in_exec, ValueError)
    shown = captured.stdout
    assert "ValueError: bad value 1" in shown
    assert "----> 2 check(x)" in shown and "----> 2     raise ValueError" in shown
    assert "nbprofiler" not in shown and "magic.py" not in shown and "exec(" not in shown
    assert_nothing_left()
