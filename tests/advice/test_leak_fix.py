"""The memory-growth suggestion names the cell line that keeps the tensors, and its code,
pasted in place of that line, stops the growth.

Each leaky cell keeps, every step, a value whose graph holds the hidden activations of
``Linear(64, 2048) -> ReLU`` for a batch of 64 (about 0.5 MiB a step): a validation loss
appended to a list, a loss added to a running total in an evaluation loop, and outputs
appended to a list. Each runs in a real IPython shell under ``%%torchprofile``, with and
without ``--stack``; the suggestion's code then replaces the named line and the cell runs
again, profiled the same way.
"""
from __future__ import annotations

import pytest

from nbprofiler.analysis.retention import fixed_statement, kept_values

SETUP = """
import torch, torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(TensorDataset(torch.randn(64 * 10, 64), torch.randint(0, 4, (64 * 10,))), batch_size=64)
x_val, y_val = torch.randn(64, 64), torch.randint(0, 4, (64,))
"""
VALIDATION = """history = []
for x, y in loader:
    opt.zero_grad()
    F.cross_entropy(model(x), y).backward()
    opt.step()
    history.append(F.cross_entropy(model(x_val), y_val))
"""
TOTAL = """total_loss = 0
for x, y in loader:
    loss = F.cross_entropy(model(x), y)
    total_loss += loss
print(f"{total_loss / len(loader):.3f}")
"""
OUTPUTS = """outputs = []
for x, y in loader:
    out = model(x)
    outputs.append(out)
predictions = torch.cat(outputs).argmax(1)
"""
CASES = {  # cell, the line that keeps the tensors, a fragment of the edit
    "validation loss appended": (VALIDATION, "history.append(F.cross_entropy(model(x_val), y_val))", "no_grad"),
    "loss added to a total": (TOTAL, "total_loss += loss", "total_loss += loss.item()"),
    "outputs appended": (OUTPUTS, "outputs.append(out)", "outputs.append(out.detach())"),
}
OPTIONS = "-q --wait 0 --warmup 1 --active 6"


def profile(ip, cell: str, stack: bool):
    result = ip.run_cell(f"%%torchprofile {OPTIONS} {'--stack' if stack else ''} -o run\n{cell}")
    result.raise_error()
    return ip.user_ns["run"]


def growth(report):
    found = [s for s in report.suggestions if s.kind == "memory_growth"]
    assert len(found) <= 1
    return found[0] if found else None


@pytest.mark.parametrize("stack", [False, True], ids=["source", "stack"])
@pytest.mark.parametrize("case", CASES)
def test_the_leak_names_its_line_and_the_pasted_fix_stops_the_growth(ip, one_torch_thread, case, stack):
    cell, keeping, edit = CASES[case]
    ip.run_cell(SETUP).raise_error()
    s = growth(profile(ip, cell, stack))
    assert s is not None
    lines = cell.splitlines()
    line = next(i for i, text in enumerate(lines, 1) if text.strip() == keeping)
    assert s.evidence["line"] == line and s.evidence["line_source"].strip() == keeping
    assert f"cell line {line}" in s.title and s.facts[0].startswith(f"cell line {line}: `{keeping}`")
    # With --stack the trace itself shows the line (or the line whose result it keeps) leaving bytes behind.
    assert s.evidence["line_found_in"] == ("trace" if stack else "source")
    assert ("the trace confirms it" in s.facts[0]) == stack
    if stack:
        assert s.evidence["kept_bytes"] > 4 * 64 * 2048 * 4  # a 64 x 2048 float activation, kept in 4+ steps
    assert edit in s.code
    assert s.evidence["end_line"] == line  # the statement is one line: the code replaces it alone
    fixed = "\n".join([*lines[:line - 1], *s.code.splitlines(), *lines[line:]]) + "\n"
    ip.run_cell(SETUP).raise_error()
    after = profile(ip, fixed, stack)  # raises on a NameError, or any error, in the pasted code
    assert growth(after) is None
    trace = after.memory_growth.set_index("source").loc["trace"]
    assert bool(trace["judged"]) and not bool(trace["flagged"])


def test_a_leak_in_code_the_cell_calls_is_named_from_the_trace_without_code(ip, one_torch_thread):
    """The list is kept in a function of an earlier cell: the source of the profiled cell shows
    nothing kept, the --stack trace shows which of its lines made what was never freed."""
    ip.run_cell(SETUP + "\nseen = []\ndef log(value):\n    seen.append(value)\n").raise_error()
    cell = "for x, y in loader:\n    log(F.cross_entropy(model(x_val), y_val))\n"
    s = growth(profile(ip, cell, stack=True))
    assert s is not None and s.evidence["line"] == 2 and s.evidence["line_found_in"] == "trace"
    assert s.facts[0].startswith("cell line 2: `log(F.cross_entropy(model(x_val), y_val))`")
    assert s.code is None and "no_grad" in s.detail  # no statement of the cell to rewrite: the fixes in words
    s = growth(profile(ip, cell, stack=False))
    assert s is not None and "line" not in s.evidence and s.code is None and "--stack" in s.detail


def kept(source: str) -> list[tuple[int, str, str]]:
    return [(k.line, k.how, k.holder) for k in kept_values(source)]


def test_the_source_finds_what_a_loop_keeps_with_a_graph():
    source = """%time
history, seen, total = [], {}, 0
for step, (x, y) in enumerate(loader):
    !echo step
    out = model(x)
    loss = F.cross_entropy(out, y)
    total += loss
    seen[step] = (out,
                  y)
    history.append(loss.item())     # a number
    n += 1
    count += x.size(0)
    times.append(time.perf_counter() - start)    # a float, nothing with a graph
    lrs.append(scheduler.get_last_lr())
    with torch.no_grad():
        history.append(model(x_val))   # no graph under no_grad
    batch = []
    batch.append(out)                  # a fresh list each iteration
    stats.append(model(batch_x).std())
"""
    assert kept(source) == [(7, "adds to", "total"), (8, "stores in", "seen"), (19, "appends to", "stats")]
    total, seen, _ = kept_values(source)
    assert total.scalar and not total.validation and 6 in total.made_on and 5 in total.made_on
    assert (seen.end_line, seen.value, seen.scalar) == (9, "out", False)


def test_a_cell_that_does_not_parse_has_no_kept_values():
    assert kept_values("for x in loader:\n    history.append(model(x)\n") == []


def test_a_statement_sharing_its_line_is_edited_in_place_not_wrapped_in_a_block():
    """``with torch.no_grad():`` around a line would take in the other statements on it (the
    training step, or the whole loop): there the kept value is detached in place instead."""
    for cell, fixed in (("for x, y in loader: history.append(model(x_val))\n",
                         "for x, y in loader: history.append(model(x_val).detach())"),
                        ("for x, y in loader:\n    opt.step(); history.append(model(x_val))  # kept\n",
                         "    opt.step(); history.append(model(x_val).detach())  # kept")):
        (k,) = kept_values(cell)
        assert k.validation and not k.alone and fixed_statement(cell, k, on_device=False) == fixed
    cell = "for x, y in loader:\n    history.append(model(x_val))  # kept\n"
    (k,) = kept_values(cell)
    assert fixed_statement(cell, k, on_device=False) == \
        "    import torch\n    with torch.no_grad():\n        history.append(model(x_val))  # kept"


def test_a_statement_over_several_lines_is_replaced_whole(ip, one_torch_thread):
    cell = ("outputs = []\nfor x, y in loader:\n    out = model(x)\n    outputs.append(\n        out\n    )\n"
            "predictions = torch.cat(outputs)\n")
    ip.run_cell(SETUP).raise_error()
    s = growth(profile(ip, cell, stack=False))
    assert s is not None and (s.evidence["line"], s.evidence["end_line"]) == (4, 6)
    lines = cell.splitlines()
    fixed = "\n".join([*lines[:3], *s.code.splitlines(), *lines[6:]]) + "\n"
    assert "out.detach()" in s.code
    ip.run_cell(SETUP).raise_error()
    assert growth(profile(ip, fixed, stack=False)) is None
