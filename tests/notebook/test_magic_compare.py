"""``%%torchprofile --compare``, ``--tried`` and ``--no-history`` in a real IPython shell, and the
previous run of a cell found by the id JupyterLab sends, in a real kernel."""
from __future__ import annotations

import ast
import sys

import pytest
from conftest import ROOT, SETUP_CELL, TRAIN_CELL
from IPython.core.error import UsageError

import nbprofiler
from nbprofiler.advice.suggestion import SUGGESTION_KINDS
from nbprofiler.notebook.command_line import split_statement
from nbprofiler.notebook.magic import TorchProfileMagics

# A loop whose steps are mostly a sleep: two runs of it take the same time, within noise.
STEADY_CELL = """
import time
for x, y in train_loader:
    time.sleep(0.01)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""


def test_compare_with_a_report_variable_shows_the_comparison_after_the_report(shell, capsys):
    shell.run_cell_magic("torchprofile", "--wait 0 --warmup 1 --active 8 -q -o before", STEADY_CELL)
    capsys.readouterr()
    shell.run_cell_magic("torchprofile", "--wait 0 --warmup 1 --active 8 --compare before", STEADY_CELL)
    shown = capsys.readouterr().out
    comparison = nbprofiler.last_comparison()
    assert comparison.before is shell.user_ns["before"] and comparison.after is nbprofiler.last()
    assert comparison.before_label == "before"
    # The report comes first, then the comparison with its verdict.
    assert shown.index("nbprofiler") < shown.index(comparison.verdict)


def test_o_and_compare_on_one_variable_compare_with_the_run_it_replaces(shell):
    shell.run_cell_magic("torchprofile", "-q -o run", TRAIN_CELL)
    old = shell.user_ns["run"]
    shell.run_cell_magic("torchprofile", "-q -o run --compare run", TRAIN_CELL)
    comparison = nbprofiler.last_comparison()
    assert comparison.before is old and comparison.after is shell.user_ns["run"] is not old


def test_compare_alone_finds_this_cells_previous_run(shell, capsys):
    cell = TRAIN_CELL + "\n# test_compare_alone\n"
    shell.run_cell_magic("torchprofile", "-q", cell)
    first = nbprofiler.last()
    shell.run_cell_magic("torchprofile", "-q", TRAIN_CELL)  # another cell runs in between
    shell.run_cell_magic("torchprofile", "-q --compare", cell)
    comparison = nbprofiler.last_comparison()
    assert comparison.before is first and comparison.before_label == "the previous run of this cell"


def test_a_cell_with_no_earlier_run_runs_and_says_so(shell, capsys):
    before = nbprofiler.last_comparison()
    shell.run_cell_magic("torchprofile", "-q --compare", TRAIN_CELL + "\n# never run before\n")
    err = capsys.readouterr().err
    assert "no earlier run to compare with" in err and len(err.strip().splitlines()) == 1
    assert nbprofiler.last_comparison() is before  # nothing compared, the run shown alone
    assert nbprofiler.last().steps.shape[0] > 0


@pytest.mark.parametrize("variable, message", [
    ("nothing_here", "there is no variable 'nothing_here' in the notebook; store a run's report in it with "
                     "-o nothing_here"),
    ("model", "'model' holds a Sequential, not an nbprofiler Report (store one with -o model)"),
    # Not a name: quoted as given, and never offered as an -o to paste.
    ("'base; print(1)'", "'base; print(1)' is not a valid variable name: name the variable a run's report was "
                         "stored in with -o"),
    ("class", "'class' is not a valid variable name: name the variable a run's report was stored in with -o"),
])
def test_compare_with_a_wrong_variable_is_a_one_line_error_before_the_cell_runs(shell, variable, message):
    shell.user_ns.pop("nothing_here", None)
    latest = nbprofiler.last()
    with pytest.raises(UsageError) as caught:
        shell.run_cell_magic("torchprofile", f"--compare {variable}", TRAIN_CELL + "ran_anyway = True\n")
    said = str(caught.value)
    assert said == f"%%torchprofile --compare: {message}"
    assert nbprofiler.last() is latest and "ran_anyway" not in shell.user_ns  # the cell did not run


def test_tried_accepts_only_the_kinds_of_suggestions_before_the_cell_runs(shell):
    latest = nbprofiler.last()
    with pytest.raises(UsageError) as caught:
        shell.run_cell_magic("torchprofile", "-q --tried faster", TRAIN_CELL + "ran_anyway = True\n")
    assert str(caught.value) == ("%%torchprofile --tried: 'faster' is not the kind of a suggestion; the kinds are "
                                 + ", ".join(SUGGESTION_KINDS))
    assert nbprofiler.last() is latest and "ran_anyway" not in shell.user_ns  # the cell did not run
    with pytest.raises(UsageError, match="'nothing_to_improve' is not the kind of a suggestion"):
        shell.run_cell_magic("torchprofile", "-q --tried nothing_to_improve", TRAIN_CELL)


def test_the_kinds_tried_are_every_kind_the_rules_make():
    """Each ``Suggestion(kind=...)`` the advice modules write is a kind ``--tried`` accepts, and
    each kind it accepts is made by some rule (``nothing_to_improve`` being no change to try)."""
    made = set()
    for module in (ROOT / "nbprofiler" / "advice").rglob("*.py"):
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Suggestion":
                (kind,) = [k.value for k in node.keywords if k.arg == "kind"]
                made.add(kind.value if isinstance(kind, ast.Constant) else kind.id)
    assert made == {*SUGGESTION_KINDS, "NOTHING_TO_IMPROVE"} and len(SUGGESTION_KINDS) == len(set(SUGGESTION_KINDS))


# A loop whose loader sleeps for each sample: the steps wait for data, so the run gets a suggestion.
WAITING_CELL = """
import time
class Sleepy(torch.utils.data.Dataset):
    def __len__(self): return 64
    def __getitem__(self, i):
        time.sleep(0.004)
        return torch.randn(20), i % 4
for x, y in DataLoader(Sleepy(), batch_size=8):
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""


def test_tried_puts_the_stated_gain_beside_the_measured_one(shell):
    shell.run_cell_magic("torchprofile", "-q -o base", WAITING_CELL)
    kind = shell.user_ns["base"].suggestions[0].kind
    assert kind in SUGGESTION_KINDS
    shell.run_cell_magic("torchprofile", f"-q --compare base --tried {kind}", WAITING_CELL)
    comparison = nbprofiler.last_comparison()
    assert comparison.tried == kind and comparison.before is shell.user_ns["base"]


def test_no_history_keeps_the_run_out_of_the_history(shell):
    runs = len(nbprofiler.history())
    shell.run_cell_magic("torchprofile", "-q --no-history", TRAIN_CELL)
    assert len(nbprofiler.history()) == runs
    shell.run_cell_magic("torchprofile", "-q", TRAIN_CELL)
    assert len(nbprofiler.history()) == runs + 1


def test_the_line_magic_tells_compare_s_variable_from_the_statement():
    parser = TorchProfileMagics.torchprofile.parser
    assert split_statement("--compare y = model(x)", parser) == ("--compare ", "y = model(x)")
    assert split_statement("--compare base model(x)", parser) == ("--compare base ", "model(x)")
    assert split_statement("--compare model(x)", parser) == ("--compare ", "model(x)")
    assert split_statement("--compare=base y = 2", parser) == ("--compare=base ", "y = 2")
    assert split_statement("--compare base", parser) == ("--compare ", "base")  # a lone name is the statement


def test_jupyterlab_s_cell_id_names_the_cell_across_edits():
    """A real kernel, sent cells as JupyterLab sends them: the cell's source changes between
    runs (a fix pasted into it), its id does not, and --compare finds its previous run."""
    sys.path.insert(0, str(ROOT / "bench"))
    from leak import widget_kernel

    with widget_kernel() as kernel:
        kernel.execute(SETUP_CELL + "import nbprofiler", cell_id="setup")
        kernel.execute(f"%%torchprofile -q\n{TRAIN_CELL}", cell_id="train")
        kernel.execute("%%torchprofile -q\nfor x, y in train_loader:\n    model(x)\n", cell_id="other")
        kernel.execute(f"%%torchprofile -q --compare\n{TRAIN_CELL}    x = x * 1\n", cell_id="train")
        keys = evaluate(kernel, "(c.before.run.cell_key, c.after.run.cell_key, c.before_label, c.after.run.notebook)"
                                " if (c := nbprofiler.last_comparison()) else None")
    assert keys == "('train', 'train', 'the previous run of this cell', None)"


def evaluate(kernel, expression: str) -> str:
    """``expression``'s repr in the kernel, asked as a front end asks (user_expressions)."""
    msg = kernel.client.session.msg("execute_request", {
        "code": "", "silent": True, "store_history": False, "allow_stdin": False,
        "user_expressions": {"value": expression}})
    kernel.client.shell_channel.send(msg)
    while True:
        answer = kernel.client.get_shell_msg(timeout=60)
        if answer["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
            value = answer["content"]["user_expressions"]["value"]
            assert value["status"] == "ok", value
            return value["data"]["text/plain"]
