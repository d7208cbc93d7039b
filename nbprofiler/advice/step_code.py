"""Autocast and gradient accumulation, as edits of the cell's own training step.

A generic loop (``loss_fn(model(x), y)``, ``optimizer``, ``train_loader``)
raises NameError in a cell that names them otherwise, so the code is the
cell's own lines, edited: the statements that compute the loss under
``torch.autocast``; ``loss.backward()`` through the GradScaler or divided by
the accumulation steps; the optimizer's ``.step()`` through the scaler or once
per accumulation. Each ``Edit`` says which cell lines it replaces, indented as
there. Where the cell does not show its step (a trace file has no cell; a loop
inside a function it calls), or its lines may not be copied (a cell from a file that
``safe_names.copyable`` refuses: ``not_copied``), the edit is given in comments, which
run when pasted, after a comment saying which.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from .cell_names import TrainingStep

# Why the code gives the edit in comments where the cell shows a step whose lines may not be copied.
NOT_COPIED = "this report's cell came from a file and uses names its code may not copy"


@dataclass(frozen=True)
class Edit:
    """Code that replaces cell lines ``line`` to ``end_line`` (1-based), which read ``line_source``."""

    code: str
    line: int
    end_line: int
    line_source: str

    @property
    def evidence(self) -> dict[str, object]:
        """The keys by which a suggestion names the cell lines its code replaces."""
        return {"line": self.line, "end_line": self.end_line, "line_source": self.line_source}


def autocast_edit(step: TrainingStep | None, dtype: str) -> Edit | None:
    """The loss's statements under autocast to ``dtype`` (``"bfloat16"``, ``"float16"``); for
    float16 the whole loop, with the GradScaler made before it and scaling the backward
    call and the optimizer's step. None where the cell's step cannot be edited so."""
    if step is None:
        return None
    wrap = (step.forward[0], step.forward[1],
            _wrapped(step, f"with torch.autocast(device_type=\"cuda\", dtype=torch.{dtype}):"))
    if dtype == "bfloat16":
        return _edit(step, step.forward[0], step.forward[1], [wrap])
    steps = [u for u in step.updates if _method(u) == "step" and u.lineno > step.backward.lineno]
    if step.loop is None or not steps:
        return None
    edits = [wrap, _receiver_edit(step, "scaler.scale({})")]
    edits += [(u.lineno, u.end_lineno or u.lineno, [f"{_indent(step.lines[u.lineno - 1])}scaler.step({step.optimizer})",
                                                    f"{_indent(step.lines[u.lineno - 1])}scaler.update()"])
              for u in steps]
    scaler = f"{_indent(step.lines[step.loop.lineno - 1])}scaler = torch.amp.GradScaler(\"cuda\")  " \
             "# fp16 needs loss scaling against underflow"
    return _edit(step, step.loop.lineno, step.loop.end_lineno or step.loop.lineno, edits, [scaler])


def accumulation_edit(step: TrainingStep | None, before: list[str], steps: int) -> Edit | None:
    """The cell's loop with the loss divided by ``steps`` before ``.backward()`` and the optimizer's
    ``.step()`` / ``.zero_grad()`` once per ``steps`` batches; ``before``: lines for above the loop
    (the DataLoader with the smaller batch). None where the cell's loop cannot be edited so."""
    if step is None or step.loop is None or not any(_method(u) == "step" for u in step.updates):
        return None
    loop, lines = step.loop, step.lines
    counter, header = _counter(step, loop)
    edits = [_receiver_edit(step, "({} / accumulation)")]
    if header is not None:
        edits.append((loop.lineno, loop.iter.end_lineno or loop.lineno, [header]))
    for u in step.updates:
        when = f"({counter} + 1)" if u.lineno > step.backward.lineno else counter  # after the backward, or before
        own = lines[u.lineno - 1:u.end_lineno]
        edits.append((u.lineno, u.end_lineno or u.lineno,
                       [f"{_indent(own[0])}if {when} % accumulation == 0:", *("    " + s for s in own)]))
    indent = _indent(lines[loop.lineno - 1])
    head = [indent + s for s in before] + [f"{indent}accumulation = {steps}  # micro-batches per optimizer step"]
    return _edit(step, loop.lineno, loop.end_lineno or loop.lineno, edits, head)


def _counter(step: TrainingStep, loop: ast.For) -> tuple[str, str | None]:
    """The loop's batch counter, and its new header where the loop does not count already."""
    it, target = loop.iter, loop.target
    if (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "enumerate"
            and len(it.args) == 1 and not it.keywords  # counting from 0, as the edit's modulo does
            and isinstance(target, ast.Tuple) and target.elts and isinstance(target.elts[0], ast.Name)):
        return target.elts[0].id, None
    counter = "i" if "i" not in step.names else "micro_step"
    names = ast.get_source_segment(step.source, target) or ""
    if isinstance(target, ast.Tuple) and not names.startswith("("):
        names = f"({names})"
    iterable = ast.get_source_segment(step.source, it)
    return counter, f"{_indent(step.lines[loop.lineno - 1])}for {counter}, {names} in enumerate({iterable}):"


def _wrapped(step: TrainingStep, header: str) -> list[str]:
    """The loss's statements in a block opened by ``header``, at their indentation."""
    first, last = step.forward
    lines = step.lines[first - 1:last]
    return [_indent(lines[0]) + header, *("    " + s if s.strip() else s for s in lines)]


def _receiver_edit(step: TrainingStep, form: str) -> tuple[int, int, list[str]]:
    """``loss.backward()`` with ``loss`` put in ``form`` (``"scaler.scale({})"``)."""
    call = step.backward.value
    assert isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)  # as training_step found it
    name = call.func.value
    raw = step.lines[name.lineno - 1].encode()
    start, end = name.col_offset, name.end_col_offset or name.col_offset
    new = raw[:start] + form.format(step.loss).encode() + raw[end:]
    return name.lineno, name.lineno, [new.decode()]


def _edit(step: TrainingStep, first: int, last: int, edits: list[tuple[int, int, list[str]]],
          head: list[str] | None = None) -> Edit:
    """Lines ``first`` to ``last`` with ``edits`` (line, end line, new lines; none overlapping) made, after
    ``head`` (and ``import torch`` where the cell does not use the name: the code does)."""
    lines = step.lines
    out = ([] if "torch" in step.names else [_indent(lines[first - 1]) + "import torch"]) + (head or [])
    n = first
    for line, end, new in sorted(edits):
        out += lines[n - 1:line - 1] + new
        n = end + 1
    out += lines[n - 1:last]
    return Edit("\n".join(out), first, last, "\n".join(lines[first - 1:last]))


def _method(statement: ast.Expr) -> str:
    call = statement.value
    return call.func.attr if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) else ""


def _indent(line: str) -> str:
    return line[:len(line) - len(line.lstrip())]


def autocast_code(step: TrainingStep | None, dtype: str, not_copied: bool = False) -> tuple[str, dict[str, object]]:
    """The autocast edit of the cell's step and the evidence naming the lines it replaces; where
    the cell shows no step to edit, or its lines may not be copied (``not_copied``), the edit in
    comments (generic names would not run), saying which, and no lines."""
    edit = autocast_edit(step, dtype)
    if edit is not None:
        return edit.code, edit.evidence
    why = NOT_COPIED if not_copied else "the cell shows no training step to edit"
    lines = [f"# {why}: in yours, compute the forward pass and the loss under",
             f"# with torch.autocast(device_type=\"cuda\", dtype=torch.{dtype}):",
             "#     loss = loss_fn(model(x), y)"]
    if dtype == "float16":
        lines += ["# and scale the loss, as fp16 needs against underflow: before the loop",
                  "# scaler = torch.amp.GradScaler(\"cuda\")",
                  "# and in place of loss.backward() and optimizer.step():",
                  "# scaler.scale(loss).backward(); scaler.step(optimizer); scaler.update()"]
    return "\n".join(lines), {}


def accumulation_code(step: TrainingStep | None, loader: tuple[str, str] | None, steps: int,
                      not_copied: bool = False) -> tuple[str, dict[str, object]]:
    """Gradient accumulation over ``steps`` micro-batches in the cell's loop, and the evidence naming
    the lines it replaces; ``loader``: the loader's name and its call with the smaller batch, made
    above the loop where the loop iterates that name. Where the cell shows no loop to edit, or its
    lines may not be copied (``not_copied``), the edits in comments (generic names would not run),
    saying which, and no lines."""
    call = [] if loader is None else loader[1].splitlines()
    uses_loader = (step is not None and step.loop is not None and loader is not None
                   and any(isinstance(n, ast.Name) and n.id == loader[0] for n in ast.walk(step.loop.iter)))
    shown = call if uses_loader else \
        ["# and make the loader's batches smaller: the memory falls with the micro-batch"] + ["# " + s for s in call]
    edit = accumulation_edit(step, shown, steps)
    if edit is not None:
        return edit.code, edit.evidence
    why = NOT_COPIED if not_copied else "the cell shows no training loop to edit"
    return "\n".join([f"# {why}: in yours, accumulate gradients over {steps} batches",
                      f"# of 1/{steps} the size: the same effective batch, less activation memory",
                      "# 1. the loader with the smaller batch:", *("# " + s for s in call or ["batch_size=..."]),
                      f"# 2. in place of loss.backward(): (loss / {steps}).backward()",
                      f"# 3. optimizer.step() and optimizer.zero_grad() once every {steps} batches"]), {}


def replaced_lines(evidence: dict[str, object]) -> str:
    """Where the code goes, in words: "; the code replaces lines 2-9 of the cell, as indented there",
    or "" where it replaces none (comments)."""
    if "line" not in evidence:
        return ""
    first, last = evidence["line"], evidence["end_line"]
    lines = f"line {first}" if first == last else f"lines {first}-{last}"
    return f"; the code replaces {lines} of the cell, as indented there"
