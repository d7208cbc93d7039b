"""The ``%%torchprofile`` / ``%torchprofile`` magics: a thin adapter over ``nbprofiler.profile``."""
from __future__ import annotations

import argparse
import ast
import asyncio
import functools
import inspect
import itertools
import re
import sys
from collections.abc import Coroutine
from dataclasses import dataclass
from types import CodeType, TracebackType
from typing import TYPE_CHECKING, Any

from IPython.core.displayhook import DisplayHook
from IPython.core.error import UsageError
from IPython.core.getipython import get_ipython
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments
from IPython.utils.process import arg_split

from ..capture.ctrl_c import CtrlCAfterTheCell, ctrl_c_held
from ..capture.heap import release_free_heap
from ..capture.session import ProfileRun
from .cell_identity import cell_key, notebook_path
from .cell_runs import Baseline, baseline, compared, finished
from ..errors import NbprofilerError, OptionError
from ..advice.suggestion import SUGGESTION_KINDS
from .option_names import check_output, check_tried, is_variable_name
from ..options import DEVICE_CHOICES, SORT_KEYS, STEP_ON_CHOICES, ProfileOptions

if TYPE_CHECKING:
    from ..render.live import LiveStatus


@magics_class
class TorchProfileMagics(Magics):
    """Registers ``torchprofile`` as a line and cell magic."""

    @magic_arguments()
    @argument("--wait", type=int, default=1,
              help="Steps to skip at the start of each cycle before warming up (default 1).")
    @argument("--warmup", type=int, default=1,
              help="Steps traced but discarded, so start-up cost is not measured (default 1).")
    @argument("--active", type=int, default=3, help="Steps recorded in each cycle (default 3).")
    @argument("--repeat", type=int, default=1,
              help="Number of wait/warmup/active cycles; 0 repeats until the cell ends (default 1).")
    @argument("--skip-first", type=int, default=0, help="Steps to ignore before the first cycle (default 0).")
    @argument("--step-on", default="auto",
              help=f"What ends a step: {'|'.join(STEP_ON_CHOICES)} (default auto: optimizer steps, else DataLoader "
                   "batches; nbprofiler.step() always).")
    @argument("-n", "--iterations", type=int, default=None,
              help="Run the cell body N times, each run one step (for cells with no loop).")
    @argument("--device", default="auto",
              help=f"{'|'.join(DEVICE_CHOICES)}: record CUDA activity (auto: when torch.cuda.is_available()).")
    @argument("--no-memory", action="store_true", help="Do not record tensor allocations (slightly lower overhead).")
    @argument("--shapes", action="store_true", help="Record input shapes, and group operators by shape.")
    @argument("--stack", action="store_true", help="Record Python stacks, to attribute time to the lines of the cell.")
    @argument("--modules", action="store_true", help="Record the nn.Module hierarchy, for time per module.")
    @argument("--trace", default=None, metavar="PATH",
              help="Write the Chrome trace to PATH (.json or .json.gz); opens in Perfetto.")
    @argument("--tensorboard", default=None, metavar="DIR",
              help="Also write DIR in the layout of torch.profiler.tensorboard_trace_handler.")
    @argument("-o", "--output", default=None, metavar="VAR",
              help="Store the Report in the variable VAR of the notebook.")
    @argument("-q", "--quiet", action="store_true", help="Display nothing (use with -o).")
    @argument("--compare", nargs="?", const="", default=None, metavar="VAR",
              help="Compare this run with the Report in VAR (alone: with this cell's previous run, in this "
                   "kernel or in the history) and show whether it got faster, beyond noise.")
    @argument("--tried", default=None, metavar="KIND",
              help="The suggestion this run tries (its kind): the comparison puts its stated gain beside the "
                   f"measured one. Implies --compare. KIND: {'|'.join(SUGGESTION_KINDS)}.")
    @argument("--no-history", action="store_true",
              help="Do not keep this run in the local history (nbprofiler.history(); file: NBPROFILER_HISTORY).")
    @argument("--sort", default=None, help=f"Sort the operator table by one of: {', '.join(SORT_KEYS)}.")
    @argument("--top", type=int, default=15, help="Number of operators to show (default 15).")
    @argument("statement", nargs="*", help="With %%torchprofile (the line magic): the statement to profile.")
    @line_cell_magic
    def torchprofile(self, line: str = "", cell: str | None = None) -> Any:
        """Profile a notebook cell under torch.profiler and show where its time goes.

        The cell runs exactly as it would without the magic; steps are found by
        themselves (each optimizer.step(), else each DataLoader batch, and every
        nbprofiler.step()), and a wait/warmup/active schedule picks the steps to
        record. CUDA activity is recorded when a GPU is available. Below the cell
        you get the report: step-time breakdown, top operators and kernels,
        memory per step, and suggestions with code to paste.

        The body runs as IPython runs a cell: %magics, !commands, the shell's AST
        transformers and top-level ``await`` work, and the value of its last
        expression (with -n, of the last run) is the cell's ``Out``, shown after
        the report. The report takes the place of the status line shown when the
        cell started, above what the cell prints; if the cell clears its output
        (``clear_output``), the report comes after what the cell left instead.
        -h shows this help.

        Ctrl-C stops the cell: the report of the steps done is shown, then the
        KeyboardInterrupt. A second Ctrl-C while the run stops waits until the report
        is kept (in -o VAR, nbprofiler.last() and the history); the cell then ends with
        one line that names where it is. Ctrl-C while the report draws stops the
        drawing only, and the line says how to show the report again.

        Usage::

            %%torchprofile [options]
            <cell body>

            %torchprofile [options] STATEMENT

        Examples::

            %%torchprofile --active 5 -o run
            for x, y in train_loader:
                loss = F.cross_entropy(model(x), y)
                opt.zero_grad(); loss.backward(); opt.step()

            %torchprofile -n 10 --wait 0 y = model(x)      # no loop: 10 runs, 10 steps

            %%torchprofile --compare                       # after a change: faster than this cell's last run?
            for x, y in train_loader: ...

            %%torchprofile --step-on manual --stack
            for batch in stream:
                process(batch)
                nbprofiler.step()                          # you decide where steps end

        Afterwards ``run.breakdown``, ``run.operators``, ``run.steps``,
        ``run.suggestions`` ... hold the tables; ``nbprofiler.last()`` returns the
        latest Report; ``run.export_chrome_trace("t.json.gz")`` saves the trace.
        Every run is kept in a local history (``nbprofiler.history()``; the file is
        ``NBPROFILER_HISTORY``, and ``--no-history`` skips it); ``--compare`` reads it
        after a kernel restart, and ``nbprofiler.last_comparison()`` returns the
        latest comparison.
        """
        __tracebackhide__ = True  # IPython and pytest show the user's frames, not the magic's
        name = "%%torchprofile" if cell is not None else "%torchprofile"
        parser = self.torchprofile.parser
        options_text, statement = (line, "") if cell is not None else _split_statement(line, parser)
        try:
            argv = arg_split(options_text, posix=True)
        except ValueError as exc:  # shlex: "No closing quotation"
            raise UsageError(f"{name}: {exc} in {options_text.strip()!r}") from None
        if _asks_for_help(argv):
            print(self.torchprofile.__doc__)  # what `%%torchprofile?` shows, in the cell's output
            return None
        try:
            args = parser.parse_args(argv)
        except UsageError as exc:
            raise UsageError(f"{name}: {exc}") from None
        source = cell if cell is not None else statement
        if not source.strip():
            raise UsageError("%torchprofile: give a statement to profile, or use %%torchprofile on a cell")
        if cell is not None and args.statement:
            raise UsageError(f"%%torchprofile: unexpected arguments {' '.join(args.statement)!r}; "
                             "options start with --")
        try:
            options = ProfileOptions(
                wait=args.wait, warmup=args.warmup, active=args.active, repeat=args.repeat,
                skip_first=args.skip_first, step_on=args.step_on, iterations=args.iterations,
                device=args.device, memory=not args.no_memory, shapes=args.shapes, stack=args.stack,
                modules=args.modules, trace=args.trace, tensorboard=args.tensorboard, sort=args.sort,
                top=args.top, quiet=args.quiet, history=not args.no_history,
            )
            check_output(args.output)
            check_tried(args.tried)
            key = cell_key(self._ipython, source)
            request = _Request(args.output, key, self._baseline(args, key), args.tried)
        except OptionError as exc:
            raise UsageError(f"{name} {exc}") from None
        return self._run(source, options, request)

    def _baseline(self, args: argparse.Namespace, key: str) -> "Baseline | None":
        """The run ``--compare`` (or ``--tried``) names, found before the cell runs; a cell with no
        earlier run to compare with runs anyway, with a note that says so."""
        if args.compare is None and args.tried is None:
            return None
        found = baseline(self._ipython.user_ns, args.compare or None, key)
        if found is None:
            print("nbprofiler: --compare: this cell has no earlier run to compare with (run it once, or name a "
                  "report with --compare VAR); the report is shown alone", file=sys.stderr)
        return found

    def _run(self, source: str, options: ProfileOptions, request: "_Request") -> Any:
        """Profile ``source``, run as IPython runs a cell, and return the value of its last
        expression (IPython shows it as the cell's ``Out``, under the report).

        A cell that awaits runs on IPython's event loop: when that loop already runs in
        this thread (a kernel), the awaitable is returned, for the cell that called the
        magic to await (``_awaited_if_it_awaits`` writes that call).
        """
        __tracebackhide__ = True
        try:
            cell = _compile_cell(self._ipython, source)
        except SyntaxError as exc:
            self._ipython.showsyntaxerror(exc.filename)  # as IPython shows a cell's: the line and a caret
            raise UsageError("%%torchprofile: the cell has a syntax error (shown above), so it did not run") from None
        profiled = self._profile(cell, options, request)
        if not cell.awaits:
            return _run_to_end(profiled)
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # no loop runs in this thread: run it as IPython runs an awaiting cell
            return self._ipython.loop_runner(profiled)
        return profiled

    async def _profile(self, cell: "_Cell", options: ProfileOptions, request: "_Request") -> Any:
        """Run ``cell`` under a run, finish and keep the run whatever happened, then show the
        report and re-raise the cell's exception. Every moment after the run may have started
        is inside a ``try`` that finishes it, so a Ctrl-C anywhere leaves nothing installed; from
        the cell's end until the run is kept, Ctrl-C is held (``CtrlCAfterTheCell``), so a second
        one, pressed as the first stops the cell, keeps the report and says where it is."""
        __tracebackhide__ = True
        from ..render.live import LiveStatus

        namespace = self._ipython.user_ns
        status = LiveStatus(enabled=not options.quiet)
        try:
            run = ProfileRun(options, namespace=namespace, cell_source=cell.source, cell_filename=cell.filename,
                             on_step=status.update, cell_key=request.cell,
                             notebook=notebook_path(self._ipython))
        except NbprofilerError as exc:
            raise UsageError(f"%%torchprofile: {exc}") from None
        ctrl_c = CtrlCAfterTheCell(owner=sys._getframe(), passing=_INTERRUPTIBLE)
        failure: BaseException | None = None
        value: Any = None
        try:
            value = await _run_started(run, status, cell, namespace, options.iterations, ctrl_c)
        except BaseException as exc:  # noqa: BLE001 - re-raised below, after the report is shown
            failure = exc
        try:
            try:
                stopping = _kept(run, status, failure, namespace, request.output)
            except BaseException as exc:  # noqa: BLE001 - struck as the keeping began (nothing held it): once more
                stopping = _kept(run, status, failure or exc, namespace, request.output) or exc
            if run.report is None:
                raise _not_started(failure or stopping)
            drawing = _show(run.report, status, options, request)
            ending, said = _ending(run.report, cell, failure, stopping, drawing, ctrl_c.pending, namespace,
                                   request.output)
        finally:
            pressed = ctrl_c.close()
        release_free_heap()  # what the profiler and the report's analysis freed goes back to the system
        if pressed and not said:  # pressed as the ending above was decided: said all the same
            ending, said = _ending(run.report, cell, failure, stopping, drawing, True, namespace, request.output)
        if ending is not None:
            raise ending
        return value

    @property
    def _ipython(self) -> InteractiveShell:
        """The shell the magic is registered with (``Magics.shell`` is None only before that)."""
        assert self.shell is not None
        return self.shell


@dataclass(frozen=True)
class _Request:
    """What the cell asked for besides profiling: where to store the report, and what to compare it with."""

    output: str | None
    cell: str  # the cell's key (cell_identity.cell_key): its runs, in the history and for --compare
    baseline: "Baseline | None"
    tried: str | None


class ReportInterrupted(KeyboardInterrupt):
    """Ctrl-C after the cell's code had ended: while the run stopped, or the report was analysed,
    drawn or shown. The report is kept all the same; IPython shows this one line, not the
    traceback of whatever library was drawing, and the cell counts as interrupted (a "Run all"
    stops here)."""

    def _render_traceback_(self) -> list[str]:  # IPython shows what this returns in place of a traceback
        return [str(self)]


def _interrupted_line(report: Any, namespace: dict[str, Any], output: str | None, drawn: bool) -> str:
    """What the user reads when a Ctrl-C came after the cell's code: where the report is kept
    (only the places that hold it), and how to show it (again)."""
    from ..capture.session import last_report

    stored = output is not None and namespace.get(output) is report
    last = last_report() is report
    if not (stored or last):
        return "nbprofiler: interrupted as the run stopped; the report could not be kept"
    if drawn:
        where = " or ".join([f"`{output}`"] * stored + ["`nbprofiler.last()`"] * last)
        return f"nbprofiler: interrupted as the run stopped; its report is kept in {where}"
    show = " or ".join([f"`{output}`"] * stored + ["`nbprofiler.last().show()`"] * last)
    return f"nbprofiler: the report was interrupted while drawing; it is kept: show it with {show}"


def _kept(run: ProfileRun, status: "LiveStatus", failure: BaseException | None, namespace: dict[str, Any],
          output: str | None) -> BaseException | None:
    """Finish ``run`` (its report becomes ``nbprofiler.last()``) and store the report in
    ``output``; what interrupted, to raise after the report. Called again after an exception
    struck it from outside (torch's SIGCHLD handler; a Ctrl-C where another SIGINT handler
    was in force than Python's), it does only what is left."""
    stopping = _finish(run, status, failure)
    if run.report is not None:
        stopping = _store(run.report, namespace, output) or stopping
    return stopping


def _finish(run: ProfileRun, status: "LiveStatus", failure: BaseException | None) -> BaseException | None:
    """Stop ``run`` and build its report, whatever ``failure`` the cell raised; what struck
    while it stopped (a Ctrl-C, held until the report existed), to raise after the report.
    Safe to call again: a run already finished, and a status line already closed, stay so."""
    interrupt: BaseException | None = None
    try:
        try:
            if run.unfinished:  # else it never started (refused, or undone by a Ctrl-C in the start), or is done
                run.finish(failure)
        except BaseException as exc:  # noqa: BLE001 - Ctrl-C in the final export: show the report, then raise
            interrupt = exc
            if run.unfinished:  # it came before finish could hold it: once more, for what is left
                run.finish(failure or exc)
        finally:
            with ctrl_c_held():  # cut short, the line's watch on the cell's clear_output would stay
                status.close()
    except KeyboardInterrupt as exc:  # pressed while the status line went, delivered after
        interrupt = interrupt or exc
    return interrupt


def _store(report: Any, namespace: dict[str, Any], output: str | None) -> KeyboardInterrupt | None:
    """Put ``report`` in the variable ``-o`` names, before anything else can be interrupted;
    a Ctrl-C meanwhile waits for it (where the hold could not begin, it is stored all the
    same), and is returned."""
    if output is None:
        return None
    try:
        with ctrl_c_held():
            namespace[output] = report
    except KeyboardInterrupt as exc:
        namespace[output] = report
        return exc
    return None


def _show(report: Any, status: "LiveStatus", options: ProfileOptions, request: _Request) -> KeyboardInterrupt | None:
    """Show the report in the status line's place, keep the run, and show its comparison.
    A Ctrl-C while the report is analysed or drawn stops the drawing only (the run is still
    kept); it is returned, for the caller to say so in one line."""
    interrupt: KeyboardInterrupt | None = None
    try:
        if not options.quiet:
            _draw(report, status)
    except KeyboardInterrupt as exc:
        interrupt = exc
    try:
        finished(report, keep=options.history)  # Ctrl-C held: kept in the history whatever was pressed
        if interrupt is None and request.baseline is not None:  # an interrupted drawing skips the comparison
            _compare(report, options, request)
    except KeyboardInterrupt as exc:
        interrupt = interrupt or exc
    return interrupt


def _draw(report: Any, status: "LiveStatus") -> None:
    """The status line turns into the report; a Ctrl-C here stops the drawing at once."""
    status.show(report)


def _compare(report: Any, options: ProfileOptions, request: _Request) -> None:
    """Compare the run with its baseline and show the comparison; a Ctrl-C here stops it at once."""
    assert request.baseline is not None
    comparison = compared(request.baseline, report, request.tried)
    if comparison is not None and not options.quiet:
        from IPython.display import display

        display(comparison)


def _ending(report: Any, cell: "_Cell", failure: BaseException | None, stopping: BaseException | None,
            drawing: KeyboardInterrupt | None, pressed: bool, namespace: dict[str, Any],
            output: str | None) -> tuple[BaseException | None, bool]:
    """What the cell raises once its run is kept (None: it returns its value), and whether the
    user was told where the report is. An interrupt after the cell's code (``stopping``,
    ``drawing``, or a Ctrl-C held since the cell ended) is one line saying so: the exception
    itself when the cell's code ended well, else printed before the cell's own exception,
    which follows with its traceback."""
    held = KeyboardInterrupt() if pressed else None
    interrupted = drawing or (stopping if isinstance(stopping, KeyboardInterrupt) else None) or held
    said = interrupted is not None
    if said:
        line = _interrupted_line(report, namespace, output, drawn=drawing is None)
        if failure is None:
            return ReportInterrupted(line), said
        print(line, file=sys.stderr)  # the cell's own exception, with its traceback, comes first
    if failure is not None:
        return failure.with_traceback(_from_cell(failure.__traceback__, cell.filename)), said
    return stopping, said  # torch's SIGCHLD handler reporting a dead DataLoader worker as the run stopped


def _not_started(failure: BaseException | None) -> BaseException:
    """What a run that never started raises: its refusal as a one-line UsageError, or what
    stopped the start (a Ctrl-C)."""
    if isinstance(failure, NbprofilerError):
        return UsageError(f"%%torchprofile: {failure}")
    assert failure is not None, "a run that never started has the reason it did not"
    return failure


async def _run_started(run: ProfileRun, status: "LiveStatus", cell: "_Cell", namespace: dict[str, Any],
                       iterations: int | None, ctrl_c: CtrlCAfterTheCell) -> Any:
    """Start ``run`` and run the cell (``iterations`` times, each a step); the last value.
    The start is in the caller's ``try`` with the cell: a Ctrl-C just after the profiler
    started is the cell's interrupt, and the caller finishes the run. While this frame is
    on the stack Ctrl-C acts at once; once it has returned or raised, it is held."""
    __tracebackhide__ = True
    ctrl_c.install()
    status.start(run)
    run.__enter__()
    value = None
    for _ in range(iterations or 1):
        value = await cell.run(namespace)
        if iterations:
            run.on_boundary("iterations")
    return value


@dataclass(frozen=True)
class _Cell:
    """A cell compiled as IPython compiles one: its %magics and !commands turned into
    calls, the shell's AST transformers applied, top-level ``await`` allowed (with
    autoawait on), and its last expression kept apart so that its value is the output.

    Every line keeps the number it has in ``source``, what --stack attributes time to.
    """

    source: str  # as the user wrote it
    filename: str
    statements: CodeType | None
    last_expression: CodeType | None  # None when the cell ends in a statement, or in ';'

    @property
    def awaits(self) -> bool:
        return any(code is not None and code.co_flags & inspect.CO_COROUTINE
                   for code in (self.statements, self.last_expression))

    async def run(self, namespace: dict[str, Any]) -> Any:
        """Run the cell once; the value of its last expression, or None."""
        __tracebackhide__ = True
        if self.statements is not None:
            await _evaluate(self.statements, namespace)
        return None if self.last_expression is None else await _evaluate(self.last_expression, namespace)


def _compile_cell(shell: Any, source: str) -> _Cell:
    """``source`` compiled as ``InteractiveShell.run_cell`` compiles a cell; a SyntaxError
    propagates."""
    transformed = shell.transform_cell(source)
    # IPython drops a cell's leading blank lines; put them back, so that each line keeps its number.
    dropped = _leading_blank_lines(source) - _leading_blank_lines(transformed)
    transformed = "\n" * max(dropped, 0) + transformed
    filename = shell.compile.cache(transformed, raw_code=source)
    tree = shell.transform_ast(shell.compile.ast_parse(transformed, filename=filename))
    body = list(tree.body)
    last = None
    if body and isinstance(body[-1], ast.Expr) and not DisplayHook.semicolon_at_end_of_expression(transformed):
        last = ast.Expression(body.pop().value)
    with shell.compile.extra_flags(ast.PyCF_ALLOW_TOP_LEVEL_AWAIT if shell.autoawait else 0):
        statements = shell.compile(ast.Module(body, []), filename, "exec") if body else None
        last_expression = shell.compile(last, filename, "eval") if last is not None else None
    return _Cell(source, filename, statements, last_expression)


def _leading_blank_lines(text: str) -> int:
    lines = text.splitlines()
    return next((i for i, line in enumerate(lines) if line.strip()), len(lines))


async def _evaluate(code: CodeType, namespace: dict[str, Any]) -> Any:
    __tracebackhide__ = True
    result = eval(code, namespace)  # noqa: S307 - the user's own cell
    return await result if code.co_flags & inspect.CO_COROUTINE else result


def _run_to_end(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine that awaits nothing that suspends (a cell without ``await``) in this
    frame, without an event loop, as IPython's pseudo-sync runner does."""
    __tracebackhide__ = True
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()
    raise AssertionError("a profiled cell without await was suspended")


def _from_cell(tb: TracebackType | None, filename: str) -> TracebackType | None:
    """The traceback from the cell's outermost frame on: the frames before it are the
    magic's, and tracebacks should show the user's code."""
    start = tb
    while start is not None and start.tb_frame.f_code.co_filename != filename:
        start = start.tb_next
    return start if start is not None else tb


# Where Ctrl-C acts at once after the cell has started: in the cell, and while the report draws.
_INTERRUPTIBLE = frozenset({_run_started.__code__, _draw.__code__, _compare.__code__})


# How IPython writes a ``%%torchprofile`` cell, or a ``%torchprofile`` line that starts a line,
# once its own transforms have run: a call that carries the options and the body as literals.
_MAGIC_CALL = re.compile(r"^get_ipython\(\)\.run_(cell|line)_magic\('torchprofile', ([^\n]*)\)$")


def _awaited_if_it_awaits(call: "re.Match[str]") -> str:
    """The magic's call, behind ``await`` when the magic profiles an awaiting body: IPython and
    ipykernel then run the cell on their event loop and await what the magic returns (the magic
    itself is called from synchronous code, and cannot run an awaiting body on a loop that
    already runs).

    IPython's ``run_cell`` catches only ``Exception`` from a transform, so a Ctrl-C while
    this reads the cell would escape the shell: the cell raises it when it runs instead,
    as if the interrupt had come a moment later. Reading the body once more (to see whether
    it awaits) comes back here for a ``%torchprofile`` line in it: that reading leaves the
    Ctrl-C to this outer one, so that it is not lost in the body's text."""
    try:
        return f"await {call.group()}" if _awaits(call) else call.group()
    except KeyboardInterrupt:
        if _reading_a_body(sys._getframe(1)):
            raise
        return "raise KeyboardInterrupt  # Ctrl-C as the cell was read, before it ran"


def _awaits(call: "re.Match[str]") -> bool:
    """Whether the magic call ``call`` (see ``_MAGIC_CALL``) profiles an awaiting body."""
    shell = get_ipython()
    cell = call.group(1) == "cell"
    try:
        arguments = ast.literal_eval(f"({call.group(2)},)")
    except Exception:  # noqa: BLE001 - a line that only looks like the call IPython writes: left as it is
        return False
    if shell is None or len(arguments) != (2 if cell else 1) or not all(isinstance(a, str) for a in arguments):
        return False
    options, body = arguments if cell else _split_statement(arguments[0], TorchProfileMagics.torchprofile.parser)
    return _profiles_an_await(shell, options, body)


def _reading_a_body(frame: Any) -> bool:
    """Whether ``frame`` runs inside another reading of ``_awaited_if_it_awaits``."""
    while frame is not None:
        if frame.f_code is _awaited_if_it_awaits.__code__:
            return True
        frame = frame.f_back
    return False


class _AwaitingMagics(functools.partial):  # type: ignore[type-arg]
    """The input transformer: each line of a transformed cell through ``_MAGIC_CALL.sub``, which
    calls ``_awaited_if_it_awaits`` for a line of the magic only. Every step of it is
    C code (``partial``, ``map``, ``re``), so a cell without the magic runs none of
    nbprofiler's Python, and a Ctrl-C while it is read lands in IPython's code, as without
    nbprofiler. It returns an iterator, which IPython joins into the cell's text: it must be
    the last of the shell's ``input_transformers_post``, after IPython has turned the magic
    into its call."""


def _awaiting_magics() -> _AwaitingMagics:
    return _AwaitingMagics(map, _MAGIC_CALL.sub, itertools.repeat(_awaited_if_it_awaits))


def _profiles_an_await(shell: Any, options: str, code: str) -> bool:
    """Whether the magic, given ``options``, profiles ``code`` as an awaiting cell, and so
    returns an awaitable (-h runs nothing, and returns none)."""
    try:
        if _asks_for_help(arg_split(options, posix=True)) or not code.strip():
            return False
        return shell.should_run_async(code, transformed_cell=shell.transform_cell(code))
    except Exception:  # noqa: BLE001 - options or code the magic cannot read: it reports them when it runs
        return False


def _asks_for_help(argv: list[str]) -> bool:
    return any(word in _HELP_FLAGS for word in argv)


_HELP_FLAGS = ("-h", "--help")  # IPython's magic parsers have no help action: the magic answers these itself
# A word as a shell splits it: unquoted runs and quoted strings, glued together; a lone
# quote that never closes is kept in the word, so that arg_split reports it.
_SHELL_WORD = re.compile(r"""(?:[^\s'"]+|'[^']*'|"(?:\\.|[^"\\])*"|['"])+""")


def _split_statement(line: str, parser: argparse.ArgumentParser) -> tuple[str, str]:
    """The line magic's options, and its statement verbatim from the first word that is
    neither an option nor an option's value (so ``y = -x`` is code, not a flag). A quoted
    value is one word, as the shell would split it (``--trace "a b.json"``)."""
    expects_value = may_take_value = False
    for word in _SHELL_WORD.finditer(line):
        token = word.group()
        if expects_value:
            expects_value = False
        elif may_take_value and _names_a_value(token, line[word.end():]):
            may_take_value = False
        elif token in _HELP_FLAGS:
            continue
        elif token.startswith("-") and token.split("=", 1)[0] in parser._option_string_actions:
            action = parser._option_string_actions[token.split("=", 1)[0]]
            given = "=" in token
            expects_value = action.nargs not in (0, "?") and not given
            may_take_value = action.nargs == "?" and not given
        else:
            return line[:word.start()], line[word.start():].strip()
    return line, ""


def _names_a_value(word: str, rest: str) -> bool:
    """Whether ``word``, after an option whose value is optional (``--compare [VAR]``), is that
    value rather than the statement's start: a name that some statement follows, and that
    does not itself start the statement (``--compare y = model(x)`` profiles ``y = ...``)."""
    follows = rest.lstrip()
    starts_code = follows[:1] in ("=", "(", ".", "[", ",", ":") or follows[:2] in ("+=", "-=", "*=", "/=")
    return is_variable_name(word) and bool(follows) and not starts_code


def load_ipython_extension(ipython: Any) -> None:
    ipython.register_magics(TorchProfileMagics)
    ipython.input_transformers_post.append(_awaiting_magics())


def unload_ipython_extension(ipython: Any) -> None:
    # By class name, so that one from an earlier import of this module (importlib.reload) goes too.
    ipython.input_transformers_post[:] = [
        t for t in ipython.input_transformers_post
        if (type(t).__module__, type(t).__name__) != (__name__, _AwaitingMagics.__name__)
    ]
    magics = ipython.magics_manager.registry.pop("TorchProfileMagics", None)
    if magics is not None:
        for kind in ("line", "cell"):
            ipython.magics_manager.magics[kind].pop("torchprofile", None)
