"""The ``%%torchprofile`` / ``%torchprofile`` magics: a thin adapter over ``nbprofiler.profile``."""
from __future__ import annotations

import argparse
import keyword
import re
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments
from IPython.utils.process import arg_split

from .capture.session import ProfileRun
from .errors import NbprofilerError, OptionError
from .options import DEVICE_CHOICES, SORT_KEYS, STEP_ON_CHOICES, ProfileOptions


@magics_class
class TorchProfileMagics(Magics):
    """Registers ``torchprofile`` as a line and cell magic."""

    @magic_arguments()
    @argument("--wait", type=int, default=1, help="Steps to skip at the start of each cycle before warming up (default 1).")
    @argument("--warmup", type=int, default=1, help="Steps traced but discarded, so start-up cost is not measured (default 1).")
    @argument("--active", type=int, default=3, help="Steps recorded in each cycle (default 3).")
    @argument("--repeat", type=int, default=1, help="Number of wait/warmup/active cycles; 0 repeats until the cell ends (default 1).")
    @argument("--skip-first", type=int, default=0, help="Steps to ignore before the first cycle (default 0).")
    @argument("--step-on", default="auto", help=f"What ends a step: {'|'.join(STEP_ON_CHOICES)} (default auto: optimizer steps, else DataLoader batches; nbprofiler.step() always).")
    @argument("-n", "--iterations", type=int, default=None, help="Run the cell body N times, each run one step (for cells with no loop).")
    @argument("--device", default="auto", help=f"{'|'.join(DEVICE_CHOICES)}: record CUDA activity (auto: when torch.cuda.is_available()).")
    @argument("--no-memory", action="store_true", help="Do not record tensor allocations (slightly lower overhead).")
    @argument("--shapes", action="store_true", help="Record input shapes, and group operators by shape.")
    @argument("--stack", action="store_true", help="Record Python stacks, to attribute time to the lines of the cell.")
    @argument("--modules", action="store_true", help="Record the nn.Module hierarchy, for time per module.")
    @argument("--trace", default=None, metavar="PATH", help="Write the Chrome trace to PATH (.json or .json.gz); opens in Perfetto.")
    @argument("--tensorboard", default=None, metavar="DIR", help="Also write DIR in the layout of torch.profiler.tensorboard_trace_handler.")
    @argument("-o", "--output", default=None, metavar="VAR", help="Store the Report in the variable VAR of the notebook.")
    @argument("-q", "--quiet", action="store_true", help="Display nothing (use with -o).")
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

            %%torchprofile --step-on manual --stack
            for batch in stream:
                process(batch)
                nbprofiler.step()                          # you decide where steps end

        Afterwards ``run.breakdown``, ``run.operators``, ``run.steps``,
        ``run.suggestions`` ... hold the tables; ``nbprofiler.last()`` returns the
        latest Report; ``run.export_chrome_trace("t.json.gz")`` saves the trace.
        """
        __tracebackhide__ = True  # IPython and pytest show the user's frames, not the magic's
        name = "%%torchprofile" if cell is not None else "%torchprofile"
        parser = self.torchprofile.parser
        options_text, statement = (line, "") if cell is not None else _split_statement(line, parser)
        try:
            argv = arg_split(options_text, posix=True)
        except ValueError as exc:  # shlex: "No closing quotation"
            raise UsageError(f"{name}: {exc} in {options_text.strip()!r}") from None
        if any(word in _HELP_FLAGS for word in argv):
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
            raise UsageError(f"%%torchprofile: unexpected arguments {' '.join(args.statement)!r}; options start with --")
        try:
            options = ProfileOptions(
                wait=args.wait, warmup=args.warmup, active=args.active, repeat=args.repeat,
                skip_first=args.skip_first, step_on=args.step_on, iterations=args.iterations,
                device=args.device, memory=not args.no_memory, shapes=args.shapes, stack=args.stack,
                modules=args.modules, trace=args.trace, tensorboard=args.tensorboard, sort=args.sort,
                top=args.top, quiet=args.quiet,
            )
        except OptionError as exc:
            raise UsageError(f"{name} {exc}") from None
        if args.output is not None and (not args.output.isidentifier() or keyword.iskeyword(args.output)):
            raise UsageError(f"{name} -o: {args.output!r} is not a valid variable name")
        return self._run(source, options, args.output)

    def _run(self, source: str, options: ProfileOptions, output: str | None) -> None:
        __tracebackhide__ = True
        shell = self.shell
        filename = shell.compile.cache(source)
        try:
            code = shell.compile(source, filename, "exec")
        except SyntaxError:
            shell.showsyntaxerror(filename)
            return None
        namespace = shell.user_ns
        from .render.live import LiveStatus

        status = LiveStatus(enabled=not options.quiet)
        try:
            run = ProfileRun(options, namespace=namespace, cell_source=source, cell_filename=filename,
                             on_step=status.update)
            status.start(run)
            run.__enter__()
        except NbprofilerError as exc:
            status.close()
            raise UsageError(f"%%torchprofile: {exc}") from None
        failure: BaseException | None = None
        try:
            for _ in range(options.iterations or 1):
                exec(code, namespace)
                if options.iterations:
                    run.on_boundary("iterations")
        except BaseException as exc:  # noqa: BLE001 - re-raised below, after the report is shown
            failure = exc
        try:
            run.finish(failure)
        except BaseException as exc:  # noqa: BLE001 - Ctrl-C in the final export: show the report, then raise
            failure = failure or exc
        finally:
            status.close()
        report = run.report
        if output is not None and report is not None:
            namespace[output] = report
        if not options.quiet and report is not None:
            status.show(report)  # the status line turns into the report
        if failure is not None:
            # The traceback from the cell's first frame on: the exec above is the magic's.
            tb = failure.__traceback__
            raise failure.with_traceback(tb.tb_next if tb is not None and tb.tb_next is not None else tb)
        return None


_HELP_FLAGS = ("-h", "--help")  # IPython's magic parsers have no help action: the magic answers these itself
# A word as a shell splits it: unquoted runs and quoted strings, glued together; a lone
# quote that never closes is kept in the word, so that arg_split reports it.
_SHELL_WORD = re.compile(r"""(?:[^\s'"]+|'[^']*'|"(?:\\.|[^"\\])*"|['"])+""")


def _split_statement(line: str, parser: argparse.ArgumentParser) -> tuple[str, str]:
    """The line magic's options, and its statement verbatim from the first word that is
    neither an option nor an option's value (so ``y = -x`` is code, not a flag). A quoted
    value is one word, as the shell would split it (``--trace "a b.json"``)."""
    expects_value = False
    for word in _SHELL_WORD.finditer(line):
        token = word.group()
        if expects_value:
            expects_value = False
        elif token in _HELP_FLAGS:
            continue
        elif token.startswith("-") and token.split("=", 1)[0] in parser._option_string_actions:
            action = parser._option_string_actions[token.split("=", 1)[0]]
            expects_value = action.nargs != 0 and "=" not in token
        else:
            return line[:word.start()], line[word.start():].strip()
    return line, ""


def load_ipython_extension(ipython: Any) -> None:
    ipython.register_magics(TorchProfileMagics)


def unload_ipython_extension(ipython: Any) -> None:
    magics = ipython.magics_manager.registry.pop("TorchProfileMagics", None)
    if magics is not None:
        for kind in ("line", "cell"):
            ipython.magics_manager.magics[kind].pop("torchprofile", None)
