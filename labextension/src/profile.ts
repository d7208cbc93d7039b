/**
 * Profiling a notebook cell from the front end, as "Profile cell" and "Try it"
 * do: one run per cell at a time, and failures told in a notification.
 */
import { Notification } from '@jupyterlab/apputils';
import { CodeCell } from '@jupyterlab/cells';
import { NotebookPanel } from '@jupyterlab/notebook';

import { executeProfiled, prepareKernel, ProfileError, readyKernel } from './kernel';
import { IProfileOptions } from './options';

export interface ITarget {
  panel: NotebookPanel;
  cell: CodeCell;
}

/** Cells being profiled now, so a second click does not queue a second run. */
const running = new WeakSet<CodeCell>();

/**
 * Run `work` on a cell unless other front-end profiling runs on it (then a
 * note says so). Failures go to a notification: the work was started by a
 * click, so nobody else would see them.
 */
export async function exclusively(cell: CodeCell, what: string, work: () => Promise<void>): Promise<void> {
  if (running.has(cell)) {
    Notification.info('This cell is already being profiled.', { autoClose: 3000 });
    return;
  }
  running.add(cell);
  try {
    await work();
  } catch (err) {
    if (err instanceof ProfileError) {
      Notification.error(err.message, { autoClose: false });
    } else if (err instanceof Error && err.message.startsWith('Canceled')) {
      // The kernel was interrupted or restarted while the cell ran.
    } else {
      Notification.error(`${what} failed: ${err instanceof Error ? err.message : String(err)}`, { autoClose: false });
      console.error(err);
    }
  } finally {
    running.delete(cell);
  }
}

/** "Profile cell": run the cell under `%%torchprofile` with `options`, its source unchanged. */
export async function profile(target: ITarget, options: IProfileOptions | null): Promise<void> {
  const { panel, cell } = target;
  if (!cell.model.sharedModel.getSource().trim()) {
    Notification.warning('The cell is empty: there is nothing to profile.', { autoClose: 4000 });
    return;
  }
  await exclusively(cell, 'Profiling', async () => {
    const kernel = await readyKernel(panel.sessionContext);
    await prepareKernel(kernel);
    await executeProfiled(cell, panel.sessionContext, options);
  });
}
