/**
 * nbprofiler's JupyterLab extension.
 *
 * - `nbprofiler:plugin`: the "Profile cell" and "Profile cell with options…"
 *   commands (palette, cell toolbar, context menu, Run menu, shortcut; the
 *   last four are declared in schema/plugin.json).
 * - `nbprofiler:renderer`: the renderer of saved `%%torchprofile` reports.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { Dialog, ICommandPalette, Notification, showDialog } from '@jupyterlab/apputils';
import { CodeCell } from '@jupyterlab/cells';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';

import { profileIcon } from './icon';
import { executeProfiled, prepareKernel, ProfileError, readyKernel } from './kernel';
import { IProfileOptions, loadOptions, OptionsForm, saveOptions } from './options';
import { RENDERER_RANK, reportRendererFactory } from './renderer';
import { REPORT_MIME } from './report/types';

export namespace CommandIDs {
  export const profile = 'nbprofiler:profile-cell';
  export const profileWithOptions = 'nbprofiler:profile-cell-with-options';
}

interface ITarget {
  panel: NotebookPanel;
  cell: CodeCell;
}

function currentTarget(tracker: INotebookTracker): ITarget | null {
  const panel = tracker.currentWidget;
  const cell = panel?.content.activeCell;
  if (!panel || !cell || cell.model.type !== 'code') {
    return null;
  }
  return { panel, cell: cell as CodeCell };
}

/** Cells being profiled now, so a second click does not queue a second run. */
const running = new WeakSet<CodeCell>();

async function profile(target: ITarget, options: IProfileOptions | null): Promise<void> {
  const { panel, cell } = target;
  if (running.has(cell)) {
    Notification.info('This cell is already being profiled.', { autoClose: 3000 });
    return;
  }
  if (!cell.model.sharedModel.getSource().trim()) {
    Notification.warning('The cell is empty: there is nothing to profile.', { autoClose: 4000 });
    return;
  }
  running.add(cell);
  try {
    const kernel = await readyKernel(panel.sessionContext);
    await prepareKernel(kernel);
    await executeProfiled(cell, panel.sessionContext, options);
  } catch (err) {
    if (err instanceof ProfileError) {
      Notification.error(err.message, { autoClose: false });
    } else if (err instanceof Error && err.message.startsWith('Canceled')) {
      // The kernel was interrupted or restarted while the cell ran.
    } else {
      Notification.error(`Profiling failed: ${err instanceof Error ? err.message : String(err)}`, { autoClose: false });
      console.error(err);
    }
  } finally {
    running.delete(cell);
  }
}

/** The active code cell to profile, or a notification asking for one. */
function targetOrWarn(tracker: INotebookTracker): ReturnType<typeof currentTarget> {
  const target = currentTarget(tracker);
  if (!target) {
    Notification.warning('Select a code cell to profile.', { autoClose: 3000 });
  }
  return target;
}

const commandsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'nbprofiler:plugin',
  description: 'The "Profile cell" commands: run a cell under %%torchprofile without changing it.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ICommandPalette],
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker, palette: ICommandPalette | null) => {
    const { commands } = app;
    const enabled = () => currentTarget(tracker) !== null;

    commands.addCommand(CommandIDs.profile, {
      label: args => (args.toolbar ? '' : 'Profile Cell'),
      caption: 'Profile cell: run it under %%torchprofile (the cell is not changed) and show the report',
      icon: args => (args.isPalette ? undefined : profileIcon),
      isEnabled: enabled,
      execute: async () => {
        const target = targetOrWarn(tracker);
        if (target) {
          await profile(target, null);
        }
      }
    });

    commands.addCommand(CommandIDs.profileWithOptions, {
      label: 'Profile Cell with Options…',
      caption: 'Profile cell with a chosen schedule, device, stacks and modules',
      icon: args => (args.isPalette ? undefined : profileIcon),
      isEnabled: enabled,
      execute: async () => {
        const target = targetOrWarn(tracker);
        if (!target) {
          return;
        }
        const form = new OptionsForm(loadOptions(target.panel.model), target.cell.model.sharedModel.getSource());
        const result = await showDialog<IProfileOptions>({
          title: 'Profile cell with options',
          body: form,
          buttons: [Dialog.cancelButton(), Dialog.okButton({ label: 'Profile' })],
          focusNodeSelector: 'input[name="active"]'
        });
        if (!result.button.accept || !result.value) {
          return;
        }
        if (target.panel.model) {
          saveOptions(target.panel.model, result.value);
        }
        await profile(target, result.value);
      }
    });

    if (palette) {
      const category = 'Notebook Operations';
      palette.addItem({ command: CommandIDs.profile, category, args: { isPalette: true } });
      palette.addItem({ command: CommandIDs.profileWithOptions, category, args: { isPalette: true } });
    }

    // Commands' enabled state follows the active cell.
    tracker.activeCellChanged.connect(() => {
      commands.notifyCommandChanged(CommandIDs.profile);
      commands.notifyCommandChanged(CommandIDs.profileWithOptions);
    });
  }
};

const rendererPlugin: JupyterFrontEndPlugin<void> = {
  id: 'nbprofiler:renderer',
  description: 'Renders saved nbprofiler reports, and hands live ones to the ipywidgets explorer.',
  autoStart: true,
  requires: [IRenderMimeRegistry],
  optional: [INotebookTracker],
  activate: (app: JupyterFrontEnd, rendermime: IRenderMimeRegistry, tracker: INotebookTracker | null) => {
    // Everywhere (output views, consoles): renderers find their panel when attached.
    rendermime.addFactory(reportRendererFactory(), RENDERER_RANK);
    // In notebooks: bind the renderers to the panel from the start, so a live
    // explorer is recognised before the output is attached.
    const bind = (panel: NotebookPanel) => {
      const rm = panel.content.rendermime;
      rm.removeMimeType(REPORT_MIME);
      rm.addFactory(reportRendererFactory({ rendermime: rm, sessionContext: panel.sessionContext }), RENDERER_RANK);
    };
    tracker?.forEach(bind);
    tracker?.widgetAdded.connect((_, panel) => bind(panel));
  }
};

export default [commandsPlugin, rendererPlugin];
