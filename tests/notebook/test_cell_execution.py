"""A profiled cell runs as IPython runs a cell: %magics and !commands, the shell's AST
transformers, top-level await, and the value of its last expression as the cell's output.
The front-end behaviour (what a notebook shows: the report once, after clear_output, and
the Out after the report) is checked through a real kernel with nbclient."""
from __future__ import annotations

import ast
import textwrap

import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

from conftest import ROOT, SETUP_CELL, assert_nothing_left

MIME = "application/vnd.nbprofiler.report+json"


def run_cell(shell, cell: str):
    with capture_output() as captured:
        result = shell.run_cell(textwrap.dedent(cell).lstrip("\n"))
    return result, captured


def test_magics_and_shell_lines_run_and_the_last_value_is_the_output(shell):
    result, captured = run_cell(shell, """
        %%torchprofile -q -o run -n 3 --wait 0 --warmup 0 --active 3
        %time y = model(torch.randn(4, 20))
        words = !echo two words
        calls = globals().get('calls', 0) + 1
        y.shape[0] * 10 + len(words[0].split())
    """)
    result.raise_error()
    assert result.result == 42 and shell.user_ns["_"] == 42  # the cell's Out, as a normal cell's
    assert shell.user_ns["calls"] == 3 and len(shell.user_ns["run"].steps) == 3
    assert captured.stdout.count("Wall time") == 3  # %time ran in each of the 3 runs
    assert "Out[" in captured.stdout and "42" in captured.stdout


def test_a_trailing_semicolon_or_statement_shows_no_value(shell):
    for cell in ("%%torchprofile -q -n 2\n1 + 1;\n", "%%torchprofile -q -n 2\nx = 1 + 1\n"):
        result, captured = run_cell(shell, cell)
        assert result.success and result.result is None and "Out[" not in captured.stdout


def test_the_shells_ast_transformers_apply(shell):
    class Doubler(ast.NodeTransformer):
        def visit_Constant(self, node):
            return ast.copy_location(ast.Constant(node.value * 2), node) if isinstance(node.value, int) else node

    shell.ast_transformers.append(Doubler())
    try:
        result, _ = run_cell(shell, "%%torchprofile -q -n 1\nx = 21\nx\n")
    finally:
        shell.ast_transformers.pop()
    assert result.result == 42


def test_top_level_await_runs_in_each_iteration(shell):
    result, _ = run_cell(shell, """
        %%torchprofile -q -o run -n 3 --wait 0 --warmup 0 --active 3
        import asyncio
        ticks = globals().get('ticks', 0) + 1
        await asyncio.sleep(0.001)
        await asyncio.sleep(0, result=ticks * 2)
    """)
    result.raise_error()
    assert shell.user_ns["ticks"] == 3 and result.result == 6
    assert len(shell.user_ns["run"].steps) == 3
    # The line magic too, and a direct call of the magic from Python (no event loop runs there).
    result, _ = run_cell(shell, "%torchprofile -q -n 2 await asyncio.sleep(0, result=7)\n")
    assert result.result == 7
    with capture_output():
        assert shell.run_cell_magic("torchprofile", "-q -n 2", "await asyncio.sleep(0, result=8)") == 8
    # -h over an awaiting body shows the help, and runs nothing.
    for cell in ("%%torchprofile -h\nawait asyncio.sleep(0)\n", "%torchprofile -h await asyncio.sleep(0)\n"):
        result, captured = run_cell(shell, cell)
        assert result.success and "--active ACTIVE" in captured.stdout and "Out[" not in captured.stdout
    assert_nothing_left()


def test_reloading_the_extension_keeps_one_transformer(shell):
    def ours():
        return [t for t in shell.input_transformers_post if type(t).__module__ == "nbprofiler.notebook.awaiting"]

    assert len(ours()) == 1
    shell.run_line_magic("reload_ext", "nbprofiler")
    assert len(ours()) == 1
    result, _ = run_cell(shell, "%%torchprofile -q -n 2\nimport asyncio\nawait asyncio.sleep(0, result=3)\n")
    assert result.result == 3


def test_an_awaiting_cell_that_fails_shows_the_report_and_its_own_frames(shell):
    result, captured = run_cell(shell, """
        %%torchprofile -o run -n 3 --wait 0 --warmup 0 --active 3
        import asyncio
        await asyncio.sleep(0)
        raise KeyError('late')
    """)
    assert isinstance(result.error_in_exec, KeyError) and shell.user_ns["run"].partial
    assert "Partial report" in captured.outputs[-1].data["text/plain"]
    assert "----> 3 raise KeyError('late')" in captured.stdout and "magic.py" not in captured.stdout
    assert_nothing_left()


def test_a_syntax_error_is_shown_and_fails_the_cell(shell):
    result, captured = run_cell(shell, "%%torchprofile -q\nx = (\n")
    assert not result.success and isinstance(result.error_in_exec, UsageError)
    assert "SyntaxError" in captured.stdout and "x = (" in captured.stdout
    assert "magic.py" not in captured.stdout
    assert_nothing_left()


@pytest.mark.usefixtures("one_torch_thread")
def test_stack_attributes_time_to_the_lines_as_written(shell):
    """%magic and !command lines become calls of one line each, and the blank lines IPython
    drops at the top are kept, so the cell's lines keep their numbers: the expensive line
    is line 5 of what the user wrote."""
    shell.run_cell("big = torch.randn(384, 384)").raise_error()
    cell = ("\n"
            "%time small = torch.randn(8, 8)\n"
            "out = !echo hi\n"
            "a = small + 1\n"
            "c = big @ big @ big\n"
            "small.relu().sum().item()\n")
    with capture_output():
        value = shell.run_cell_magic("torchprofile", "--stack --wait 0 --warmup 0 --active 3 -n 3 -q -o run", cell)
    lines = shell.user_ns["run"].lines
    assert lines["line"].iloc[0] == 5 and lines["source"].iloc[0] == "c = big @ big @ big"
    assert lines["host_us"].iloc[0] > 0.6 * lines["host_us"].sum()
    assert dict(zip(lines["line"], lines["source"]))[6] == "small.relu().sum().item()"
    assert isinstance(value, float)


def test_clear_output_is_the_shells_own_again_after_the_cell(shell):
    publisher = shell.display_pub
    result, _ = run_cell(shell, "%%torchprofile -n 2\nfrom IPython.display import clear_output\nclear_output()\n")
    result.raise_error()
    assert shell.display_pub is publisher and "clear_output" not in vars(publisher)


# -- through a real kernel: what the notebook shows --------------------------------------------

CLEARING_CELL = """\
%%torchprofile --wait 0 --warmup 1 --active 2
from IPython.display import clear_output
for i, (x, y) in enumerate(train_loader):
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    clear_output(wait=True)
    print(f"batch {i} loss {loss.item():.3f}")
"""
PRINTING_CELL = """\
%%torchprofile --wait 0 --warmup 1 --active 2
for i, (x, y) in enumerate(train_loader):
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
print("done")
round(loss.item() * 0, 1) + 7
"""
AWAITING_CELL = """\
%%torchprofile -n 3 --wait 0 --warmup 1 --active 2
import asyncio
y = model(torch.randn(8, 20))
await asyncio.sleep(0, result=y.shape[0])
"""
CLEARED_AT_THE_END = """\
%%torchprofile -n 3 --wait 0 --warmup 1 --active 2
from IPython.display import clear_output
print("gone")
y = model(torch.randn(8, 20))
clear_output()
"""


@pytest.fixture(scope="module")
def executed():
    """One kernel runs the cells above, as a notebook in nbclient (JupyterLab's rules for
    clear_output and display updates are the same)."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    cells = ["%load_ext nbprofiler\n" + SETUP_CELL, CLEARING_CELL, PRINTING_CELL, AWAITING_CELL, CLEARED_AT_THE_END]
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    NotebookClient(nb, timeout=240, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()
    return {cell: nb.cells[i].outputs for i, cell in enumerate(cells)}


def reports(outputs) -> list[dict]:
    return [o for o in outputs if MIME in o.get("data", {})]


def test_clear_output_in_the_loop_keeps_the_report_once(executed):
    outputs = executed[CLEARING_CELL]
    assert len(reports(outputs)) == 1
    text = "".join(o.get("text", "") for o in outputs if o["output_type"] == "stream")
    assert "batch 11" in text and "batch 10" not in text  # the cell's own clearing still works
    assert outputs[-1] is reports(outputs)[0]  # the report comes after what the cell left


def test_clear_output_at_the_end_keeps_the_report_once(executed):
    outputs = executed[CLEARED_AT_THE_END]
    assert len(reports(outputs)) == 1
    assert not any("gone" in o.get("text", "") for o in outputs)


def test_the_report_then_the_value_as_out(executed):
    outputs = executed[PRINTING_CELL]
    kinds = [("report" if MIME in o.get("data", {}) else o["output_type"]) for o in outputs]
    assert kinds.count("report") == 1 and kinds[-1] == "execute_result"
    assert outputs[-1]["data"]["text/plain"] == "7.0"
    assert kinds.index("report") < kinds.index("stream")  # the status line at the top became the report


def test_top_level_await_in_a_kernel(executed):
    outputs = executed[AWAITING_CELL]
    assert not [o for o in outputs if o["output_type"] == "error"]
    assert len(reports(outputs)) == 1
    assert outputs[-1]["output_type"] == "execute_result" and outputs[-1]["data"]["text/plain"] == "8"


def test_ctrl_c_while_the_cell_is_read_reaches_the_user_as_the_cells_own(shell, monkeypatch):
    """A Ctrl-C that lands while the await transformer reads a profiled cell must not escape
    IPython's run_cell (it catches only Exception there): the cell raises it instead."""
    from nbprofiler.notebook import awaiting

    def interrupted(*_: object) -> bool:
        raise KeyboardInterrupt

    monkeypatch.setattr(awaiting, "_profiles_an_await", interrupted)
    with capture_output():
        result = shell.run_cell("%%torchprofile -q\nawait asyncio.sleep(0)\n")
    assert isinstance(result.error_in_exec, KeyboardInterrupt)
    monkeypatch.undo()
    with capture_output():
        shell.run_cell("x_after = 1 + 1").raise_error()
    assert shell.user_ns["x_after"] == 2
    assert_nothing_left()
