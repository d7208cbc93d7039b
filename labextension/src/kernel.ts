/**
 * Talking to the kernel for "Profile cell": check that it can profile (an
 * IPython kernel with torch and nbprofiler), load the extension when needed,
 * and run the cell under `%%torchprofile` into the cell's own output area.
 */
import { ISessionContext } from '@jupyterlab/apputils';
import { CodeCell } from '@jupyterlab/cells';
import { OutputArea } from '@jupyterlab/outputarea';
import { Kernel, KernelMessage } from '@jupyterlab/services';

import { IProfileOptions, profiledCode } from './options';
import { parseReprString, PREPARE_EXPRESSION, prepareMessage, ProfileError } from './prepare';

export { ProfileError } from './prepare';

/** The kernel of a session, once it is ready; throws ProfileError without one. */
export async function readyKernel(sessionContext: ISessionContext): Promise<Kernel.IKernelConnection> {
  await sessionContext.ready;
  const kernel = sessionContext.session?.kernel;
  if (!kernel || sessionContext.hasNoKernel) {
    throw new ProfileError('This notebook has no kernel. Select a Python kernel with torch and nbprofiler installed, then profile again.');
  }
  return kernel;
}

/** What the kernel answered for one user expression: its status and the expression's result. */
export interface IExpressionReply {
  status: string;
  result?: { status: string; data?: { 'text/plain'?: string }; ename?: string; evalue?: string };
}

/**
 * Evaluate `expression` in the kernel as a user expression of a silent, empty request: it runs
 * no cell, counts no execution and leaves no history.
 */
export async function evaluateSilently(kernel: Kernel.IKernelConnection, expression: string): Promise<IExpressionReply> {
  const future = kernel.requestExecute({
    code: '',
    silent: true,
    store_history: false,
    allow_stdin: false,
    stop_on_error: false,
    user_expressions: { nbprofiler: expression }
  });
  const content = ((await future.done) as KernelMessage.IExecuteReplyMsg).content;
  const result = content.status === 'ok' ? (content.user_expressions ?? {}).nbprofiler : undefined;
  return { status: content.status, result: result as IExpressionReply['result'] };
}

/**
 * Check the kernel and load the extension. Throws ProfileError with a message
 * for the user when the kernel cannot profile.
 */
export async function prepareKernel(kernel: Kernel.IKernelConnection): Promise<void> {
  const info = await kernel.info;
  const language = (info.language_info?.name ?? '').toLowerCase();
  const name = kernel.name;
  if (language !== 'python') {
    throw new ProfileError(
      `Profile cell needs a Python kernel with PyTorch; the kernel "${name}" runs ${info.language_info?.name || 'another language'}.`
    );
  }
  const { status: replyStatus, result } = await evaluateSilently(kernel, PREPARE_EXPRESSION);
  if (replyStatus !== 'ok') {
    throw new ProfileError(`The kernel "${name}" could not check for torch (${replyStatus}).`);
  }
  if (!result) {
    throw new ProfileError(`The kernel "${name}" did not answer the profiler check.`);
  }
  if (result.status !== 'ok') {
    if (result.ename === 'NameError' && /get_ipython/.test(result.evalue ?? '')) {
      throw new ProfileError(`The kernel "${name}" is not an IPython kernel, so it has no %%torchprofile magic.`);
    }
    throw new ProfileError(`Loading nbprofiler in the kernel failed: ${result.ename ?? 'error'}: ${result.evalue ?? ''}`.trim());
  }
  const status = parseReprString(result.data?.['text/plain'] ?? '');
  if (status !== 'ok') {
    throw new ProfileError(prepareMessage(status, name));
  }
}

/**
 * Run a code cell under `%%torchprofile` with `options` and then the `extra`
 * flags, into its own output area, the way JupyterLab runs a cell (prompt,
 * execution count, trust); the cell's source is not changed.
 */
export async function executeProfiled(
  cell: CodeCell,
  sessionContext: ISessionContext,
  options: IProfileOptions | null,
  extra: string[] = []
): Promise<KernelMessage.IExecuteReplyMsg | undefined> {
  const model = cell.model;
  const code = profiledCode(model.sharedModel.getSource(), options, extra);
  const metadata = { ...model.metadata, cellId: model.sharedModel.getId() };
  model.sharedModel.transact(() => {
    model.clearExecution();
    cell.outputHidden = false;
  }, false);
  model.executionState = 'running';
  model.trusted = true;
  let future: Kernel.IShellFuture<KernelMessage.IExecuteRequestMsg, KernelMessage.IExecuteReplyMsg> | null = null;
  try {
    const done = OutputArea.execute(code, cell.outputArea, sessionContext, metadata);
    future = cell.outputArea.future;
    const reply = await done;
    if (reply) {
      model.executionCount = reply.content.execution_count;
    }
    return reply;
  } finally {
    if (!cell.isDisposed && (!future || cell.outputArea.future === future)) {
      model.executionState = 'idle';
    }
  }
}
