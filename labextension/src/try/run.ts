/**
 * "Try it": re-profile a suggestion in one click. The card's code goes into a
 * new, marked cell above the profiled cell and runs there, as JupyterLab runs a
 * cell (above, so that Run All replays the fix before the profile); then the profiled cell runs again under `%%torchprofile --compare
 * --tried KIND`, so its second output measures the gain beside the stated one.
 * The profiled cell's source is not changed, and the new cell stays in the
 * notebook: what was tried is written down where the user can read it.
 *
 * Only the code of a report this kernel made runs at once (card.ts says how the
 * kernel confirms it). Any other card's code, built from names and lines its
 * report's maker wrote, is inserted without running, with a line saying why.
 */
import { Notification } from '@jupyterlab/apputils';
import { Cell, CodeCell } from '@jupyterlab/cells';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { Kernel, KernelMessage } from '@jupyterlab/services';

import { evaluateSilently, executeProfiled, prepareKernel, ProfileError, readyKernel } from '../kernel';
import { exclusively } from '../profile';
import {
  ITryRequest,
  madeHereExpression,
  notRunLine,
  readTryRequest,
  triedMetadata,
  triedSource,
  TRIED_METADATA_KEY,
  TRY_SELECTOR,
  tryFlags
} from './card';

const BUSY_LABEL = 'Trying…';

/** The kind a cell tries (its `nbprofiler.tried` metadata), or null for any other cell. */
function triedKind(cell: Cell): string | null {
  const md = cell.model.getMetadata(TRIED_METADATA_KEY) as { tried?: unknown } | undefined;
  return typeof md?.tried === 'string' ? md.tried : null;
}

/**
 * Put the marked cell with the suggestion's code right above `cell` (with `notRun`, the line saying why it is
 * not run), so that Run All runs the fix, then the profile, and reproduces the comparison the notebook shows;
 * returns its widget. Cells tried before on `cell` stay above it in the order they were tried; trying a kind
 * that one of them already tries rewrites that cell rather than adding a second one.
 */
export function insertTriedCell(panel: NotebookPanel, cell: CodeCell, request: ITryRequest, notRun = ''): CodeCell {
  const notebook = panel.content;
  const model = panel.model;
  const index = notebook.widgets.indexOf(cell);
  if (!model || index < 0) {
    throw new ProfileError('The profiled cell is no longer in its notebook.');
  }
  const source = triedSource(request, notRun);
  for (let k = index - 1; k >= 0 && triedKind(notebook.widgets[k]) !== null; k--) {
    if (triedKind(notebook.widgets[k]) === request.kind) {
      notebook.widgets[k].model.sharedModel.setSource(source);
      return notebook.widgets[k] as CodeCell;
    }
  }
  model.sharedModel.insertCell(index, { cell_type: 'code', source, metadata: triedMetadata(request.kind) });
  return notebook.widgets[index] as CodeCell;
}

/** Why a cell's run failed, in words; '' when it ran. */
function failure(reply: KernelMessage.IExecuteReplyMsg | void): string {
  if (!reply) {
    return 'it did not run (no kernel)';
  }
  const content = reply.content;
  if (content.status === 'ok') {
    return '';
  }
  if (content.status === 'error') {
    return `${content.ename}: ${content.evalue}`;
  }
  return 'it was aborted';
}

/** Whether `kernel` made the report of the card whose token is `token`. */
export async function madeByKernel(kernel: Kernel.IKernelConnection, token: string): Promise<boolean> {
  const { result } = await evaluateSilently(kernel, madeHereExpression(token));
  return result?.status === 'ok' && result.data?.['text/plain'] === 'True';
}

/**
 * Insert and run the suggestion's cell, then re-run the profiled cell to compare; where the kernel did
 * not make the report, insert it without running and say why.
 */
export async function trySuggestion(panel: NotebookPanel, cell: CodeCell, request: ITryRequest): Promise<void> {
  const { sessionContext } = panel;
  let madeHere = false;
  if (request.token) {
    const kernel = await readyKernel(sessionContext);
    await prepareKernel(kernel);
    madeHere = await madeByKernel(kernel, request.token);
  }
  if (!madeHere) {
    const line = notRunLine(request);
    insertTriedCell(panel, cell, request, line);
    Notification.info(line, { autoClose: false });
    return;
  }
  const tried = insertTriedCell(panel, cell, request);
  const why = failure(await CodeCell.execute(tried, sessionContext));
  if (why) {
    throw new ProfileError(
      `The suggestion's code failed in the new cell above the profiled one (${why}). ` +
        'Fix it there and run it, then re-run the profiled cell with %%torchprofile --compare.'
    );
  }
  await executeProfiled(cell, sessionContext, null, tryFlags(request.kind));
}

/** A click on a "Try it" button: find its notebook cell and try the suggestion, once at a time. */
export async function onTryClick(tracker: INotebookTracker, button: HTMLButtonElement): Promise<void> {
  if (button.disabled) {
    return;
  }
  const request = readTryRequest(button);
  if (typeof request === 'string') {
    Notification.warning(request, { autoClose: 4000 });
    return;
  }
  const panel = tracker.find(p => p.node.contains(button));
  const cell = panel?.content.widgets.find(c => c.node.contains(button));
  if (!panel || !cell || cell.model.type !== 'code') {
    Notification.warning('"Try it" works on a report shown under its notebook cell.', { autoClose: 4000 });
    return;
  }
  const label = button.textContent;
  button.disabled = true;
  button.textContent = BUSY_LABEL;
  try {
    await exclusively(cell as CodeCell, 'Trying the suggestion', () => trySuggestion(panel, cell as CodeCell, request));
  } finally {
    // The re-run usually replaces the card; a button still shown gets its label back.
    button.disabled = false;
    button.textContent = label;
  }
}

/** The delegated click handler for every "Try it" button of the page (widget, HTML or saved report). */
export function tryClickListener(tracker: INotebookTracker): (event: MouseEvent) => void {
  return (event: MouseEvent) => {
    const target = event.target;
    const button = target instanceof Element ? target.closest<HTMLButtonElement>(TRY_SELECTOR) : null;
    if (!button) {
      return;
    }
    event.preventDefault();
    void onTryClick(tracker, button);
  };
}
