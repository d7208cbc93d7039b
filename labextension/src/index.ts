/**
 * nbprofiler's JupyterLab extension.
 *
 * - `nbprofiler:plugin`: the "Profile cell" and "Profile cell with options…"
 *   commands (palette, cell toolbar, context menu, Run menu, shortcut; the
 *   last four are declared in schema/plugin.json).
 * - `nbprofiler:renderer`: the renderers of saved `%%torchprofile` reports and
 *   of their comparisons (`--compare`).
 * - `nbprofiler:try-it`: the "Try it" buttons of suggestion cards.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { Dialog, ICommandPalette, Notification, showDialog } from '@jupyterlab/apputils';
import { CodeCell } from '@jupyterlab/cells';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';

import { CHART_MIME, chartRendererFactory } from './chart_renderer';
import { FLAME_MIME, flameRendererFactory } from './flame_renderer';
import { COMPARISON_MIME, comparisonRendererFactory } from './comparison';
import { profileIcon } from './icon';
import { IProfileOptions, loadOptions, optionErrors, OptionsForm, saveOptions } from './options';
import { ITarget, profile } from './profile';
import { RENDERER_RANK, reportRendererFactory } from './renderer';
import { REPORT_MIME } from './report/types';
import { TIMELINE_MIME, timelineRendererFactory } from './timeline_renderer';
import { LAB_CLASS } from './try/card';
import { tryClickListener } from './try/run';

export namespace CommandIDs {
  export const profile = 'nbprofiler:profile-cell';
  export const profileWithOptions = 'nbprofiler:profile-cell-with-options';
}

function currentTarget(tracker: INotebookTracker): ITarget | null {
  const panel = tracker.currentWidget;
  const cell = panel?.content.activeCell;
  if (!panel || !cell || cell.model.type !== 'code') {
    return null;
  }
  return { panel, cell: cell as CodeCell };
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
      caption: 'Profile cell with a chosen schedule, device, stacks, modules, shapes, output variable and trace file',
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
        const errors = optionErrors(result.value);
        if (errors.length) {
          Notification.error(`Not profiled: ${errors.join('; ')}`, { autoClose: 8000 });
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
  description: 'Renders saved nbprofiler reports and comparisons, and hands live ones to the ipywidgets explorer.',
  autoStart: true,
  requires: [IRenderMimeRegistry],
  optional: [INotebookTracker],
  activate: (app: JupyterFrontEnd, rendermime: IRenderMimeRegistry, tracker: INotebookTracker | null) => {
    const factories = [
      { mime: REPORT_MIME, make: reportRendererFactory },
      { mime: COMPARISON_MIME, make: comparisonRendererFactory },
      { mime: TIMELINE_MIME, make: timelineRendererFactory },
      { mime: CHART_MIME, make: chartRendererFactory },
      { mime: FLAME_MIME, make: flameRendererFactory }
    ];
    // Everywhere (output views, consoles): renderers find their panel when attached.
    for (const { make } of factories) {
      rendermime.addFactory(make(), RENDERER_RANK);
    }
    // In notebooks: bind the renderers to the panel from the start, so a live
    // explorer is recognised before the output is attached.
    const bind = (panel: NotebookPanel) => {
      const rm = panel.content.rendermime;
      for (const { mime, make } of factories) {
        rm.removeMimeType(mime);
        rm.addFactory(make({ rendermime: rm, sessionContext: panel.sessionContext }), RENDERER_RANK);
      }
    };
    tracker?.forEach(bind);
    tracker?.widgetAdded.connect((_, panel) => bind(panel));
  }
};

const tryPlugin: JupyterFrontEndPlugin<void> = {
  id: 'nbprofiler:try-it',
  description: 'The "Try it" buttons of suggestion cards: run the code in a new cell, re-profile, compare.',
  autoStart: true,
  requires: [INotebookTracker],
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker) => {
    // The cards' CSS shows "Try it" (and hides the by-hand line) under this class.
    document.body.classList.add(LAB_CLASS);
    // One delegated handler: the buttons live in widget, HTML and saved-report outputs alike.
    document.addEventListener('click', tryClickListener(tracker));
  }
};

export default [commandsPlugin, rendererPlugin, tryPlugin];
