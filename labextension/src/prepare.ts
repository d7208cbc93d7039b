/**
 * The kernel-side check of "Profile cell", as text: no JupyterLab imports, so
 * it is unit-tested on its own.
 */

/** A problem the user can fix, worded for a notification. */
export class ProfileError extends Error {}

/**
 * One expression, evaluated silently through `user_expressions`: nothing runs
 * in the cell's history or namespace. It loads the extension when torch and
 * nbprofiler are importable and `%%torchprofile` is not registered yet.
 */
export const PREPARE_EXPRESSION =
  "(lambda ip, find: 'no-torch' if find('torch') is None " +
  "else 'no-nbprofiler' if find('nbprofiler') is None " +
  "else 'ok' if 'torchprofile' in ip.magics_manager.magics['cell'] " +
  "else (ip.run_line_magic('load_ext', 'nbprofiler'), " +
  "'ok' if 'torchprofile' in ip.magics_manager.magics['cell'] else 'not-registered')[1])" +
  "(get_ipython(), __import__('importlib.util', fromlist=['find_spec']).find_spec)";

export type PrepareStatus = 'ok' | 'no-torch' | 'no-nbprofiler' | 'not-registered';

/** The message for a prepare result that is not 'ok'. */
export function prepareMessage(status: string, kernelName: string): string {
  switch (status) {
    case 'no-torch':
      return `PyTorch is not installed in the environment of the kernel "${kernelName}". Install torch there (or pick a kernel that has it), then profile again.`;
    case 'no-nbprofiler':
      return `nbprofiler is not installed in the environment of the kernel "${kernelName}". Run \`%pip install nbprofiler\` in the notebook, then profile again.`;
    case 'not-registered':
      return '`%load_ext nbprofiler` ran but did not register `%%torchprofile`: restart the kernel and try again.';
    default:
      return `The kernel could not prepare the profiler (${status}).`;
  }
}

/** Read the `text/plain` repr of a string result: `'ok'` → ok. */
export function parseReprString(repr: string): string {
  const m = /^(['"])(.*)\1$/s.exec(repr.trim());
  return m ? m[2] : repr.trim();
}
