"""The ``%%torchprofile`` / ``%torchprofile`` magics: a thin adapter over ``nbprofiler.profile``."""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments
from IPython.utils.process import arg_split

from ..advice.suggestion import SUGGESTION_KINDS
from ..capture.ctrl_c import CtrlCAfterTheCell, ctrl_c_held
from ..capture.heap import release_free_heap
from ..errors import NbprofilerError, OptionError
from ..options import ProfileOptions
from ..render.live import LiveStatus
from . import awaiting
from .cell import Cell, compile_cell, run_as_ipython
from .cell_identity import cell_key, notebook_path
from .cell_runs import Baseline, baseline, compared, finished
from .command_line import asks_for_help, options_from, profile_options, split_statement
from .option_names import check_output, check_tried

if TYPE_CHECKING:
    from ..capture.session import ProfileRun


@magics_class
class TorchProfileMagics(Magics):
    """Registers ``torchprofile`` as a line and cell magic."""

    @magic_arguments()
    @profile_options
    @argument("-o", "--output", default=None, metavar="VAR",
              help="Store the Report in the variable VAR of the notebook.")
    @argument("--compare", nargs="?", const="", default=None, metavar="VAR",
              help="Compare this run with the Report in VAR (alone: with this cell's previous run, in this "
                   "kernel or in the history) and show whether it got faster, beyond noise.")
    @argument("--tried", default=None, metavar="KIND",
              help="The suggestion this run tries (its kind): the comparison puts its stated gain beside the "
                   f"measured one. Implies --compare. KIND: {'|'.join(SUGGESTION_KINDS)}.")
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
        options_text, statement = (line, "") if cell is not None else split_statement(line, parser)
        try:
            argv = arg_split(options_text, posix=True)
        except ValueError as exc:  # shlex: "No closing quotation"
            raise UsageError(f"{name}: {exc} in {options_text.strip()!r}") from None
        if asks_for_help(argv):
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
            options = options_from(args)
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
        magic to await (``awaiting`` writes that call).
        """
        __tracebackhide__ = True
        try:
            cell = compile_cell(self._ipython, source)
        except SyntaxError as exc:
            self._ipython.showsyntaxerror(exc.filename)  # as IPython shows a cell's: the line and a caret
            raise UsageError("%%torchprofile: the cell has a syntax error (shown above), so it did not run") from None
        return run_as_ipython(self._ipython, self._profile(cell, options, request), cell.awaits)

    async def _profile(self, cell: Cell, options: ProfileOptions, request: "_Request") -> Any:
        """Run ``cell`` under a run, finish and keep the run whatever happened, then show the
        report and re-raise the cell's exception. Every moment after the run may have started
        is inside a ``try`` that finishes it, so a Ctrl-C anywhere leaves nothing installed; from
        the cell's end until the run is kept, Ctrl-C is held (``CtrlCAfterTheCell``), so a second
        one, pressed as the first stops the cell, keeps the report and says where it is."""
        __tracebackhide__ = True
        from .profile import live_run  # torch, imported when the first profiled cell runs

        namespace = self._ipython.user_ns
        status = LiveStatus(enabled=not options.quiet)
        try:
            run = live_run(options, namespace=namespace, cell_source=cell.source, cell_filename=cell.filename,
                           on_step=status.update, cell_key=request.cell, notebook=notebook_path(self._ipython))
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
    from .profile import last_report  # torch: this module leaves it unimported until a cell runs

    stored = output is not None and namespace.get(output) is report
    last = last_report() is report
    if not (stored or last):
        return "nbprofiler: interrupted as the run stopped; the report could not be kept"
    if drawn:
        where = " or ".join([f"`{output}`"] * stored + ["`nbprofiler.last()`"] * last)
        return f"nbprofiler: interrupted as the run stopped; its report is kept in {where}"
    show = " or ".join([f"`{output}`"] * stored + ["`nbprofiler.last().show()`"] * last)
    return f"nbprofiler: the report was interrupted while drawing; it is kept: show it with {show}"


def _kept(run: ProfileRun, status: LiveStatus, failure: BaseException | None, namespace: dict[str, Any],
          output: str | None) -> BaseException | None:
    """Finish ``run`` (its report becomes ``nbprofiler.last()``) and store the report in
    ``output``; what interrupted, to raise after the report. Called again after an exception
    struck it from outside (torch's SIGCHLD handler; a Ctrl-C where another SIGINT handler
    was in force than Python's), it does only what is left."""
    stopping = _finish(run, status, failure)
    if run.report is not None:
        stopping = _store(run.report, namespace, output) or stopping
    return stopping


def _finish(run: ProfileRun, status: LiveStatus, failure: BaseException | None) -> BaseException | None:
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


def _show(report: Any, status: LiveStatus, options: ProfileOptions, request: _Request) -> KeyboardInterrupt | None:
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


def _draw(report: Any, status: LiveStatus) -> None:
    """The status line turns into the report; a Ctrl-C here stops the drawing at once."""
    status.show(report)


def _compare(report: Any, options: ProfileOptions, request: _Request) -> None:
    """Compare the run with its baseline and show the comparison; a Ctrl-C here stops it at once."""
    assert request.baseline is not None
    comparison = compared(request.baseline, report, request.tried)
    if comparison is not None and not options.quiet:
        from IPython.display import display

        display(comparison)


def _ending(report: Any, cell: Cell, failure: BaseException | None, stopping: BaseException | None,
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
        return failure.with_traceback(cell.own_frames(failure.__traceback__)), said
    return stopping, said  # torch's SIGCHLD handler reporting a dead DataLoader worker as the run stopped


def _not_started(failure: BaseException | None) -> BaseException:
    """What a run that never started raises: its refusal as a one-line UsageError, or what
    stopped the start (a Ctrl-C)."""
    if isinstance(failure, NbprofilerError):
        return UsageError(f"%%torchprofile: {failure}")
    assert failure is not None, "a run that never started has the reason it did not"
    return failure


async def _run_started(run: ProfileRun, status: LiveStatus, cell: Cell, namespace: dict[str, Any],
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


# Where Ctrl-C acts at once after the cell has started: in the cell, and while the report draws.
_INTERRUPTIBLE = frozenset({_run_started.__code__, _draw.__code__, _compare.__code__})


def load_ipython_extension(ipython: Any) -> None:
    ipython.register_magics(TorchProfileMagics)
    awaiting.install(ipython, TorchProfileMagics.torchprofile.parser)


def unload_ipython_extension(ipython: Any) -> None:
    awaiting.remove(ipython)
    magics = ipython.magics_manager.registry.pop("TorchProfileMagics", None)
    if magics is not None:
        for kind in ("line", "cell"):
            ipython.magics_manager.magics[kind].pop("torchprofile", None)
