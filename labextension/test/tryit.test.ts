/**
 * "Try it": the button in every card with code, what a click reads from the
 * card, and what it does in the notebook (a marked cell above, run, then the
 * profiled cell re-run with `--compare --tried KIND`), against a fake notebook
 * and kernel. JupyterLab's cell runner, output area and notifications are
 * replaced by recorders; the extension's own code runs as it is. The code runs
 * only for a report the kernel made (it confirms the card's token); any other
 * card's code is inserted without running, with a line saying why.
 */
import { readFileSync } from 'fs';
import { join } from 'path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

const calls = vi.hoisted(() => ({ order: [] as string[], executeCell: vi.fn(), executeOutput: vi.fn(), notify: [] as string[][] }));

vi.mock('@jupyterlab/cells', () => ({ CodeCell: { execute: calls.executeCell } }));
vi.mock('@jupyterlab/outputarea', () => ({ OutputArea: { execute: calls.executeOutput } }));
vi.mock('@jupyterlab/apputils', () => ({
  Notification: Object.fromEntries(
    ['info', 'warning', 'error', 'success'].map(level => [level, (message: string) => void calls.notify.push([level, message])])
  )
}));

import { PromiseDelegate } from '@lumino/coreutils';

import { parseReport } from '../src/report/types';
import { ReportView } from '../src/report/view';
import { LAB_CLASS, madeHereExpression, readTryRequest, triedMarker, tryFlags } from '../src/try/card';
import { onTryClick, tryClickListener } from '../src/try/run';

const HOSTILE_SCRIPT = '</script><script>alert("nbp")</script>';
const v100 = JSON.parse(readFileSync(join(__dirname, 'fixtures', 'report_v100_trace.json'), 'utf-8'));
const loaderSuggestion = v100.suggestions.find((s: any) => s.kind === 'dataloader_workers');
/** The token the fake kernel issued: the report of a live run in this kernel. */
const TOKEN = '0123456789abcdef0123456789abcdef';
const madeHere = { ...v100, made_here: true, report_token: TOKEN, origin: null };
const LOADED = 'this report was loaded from a saved report file';
const loaded = { ...v100, made_here: false, report_token: null, origin: LOADED };

function okReply(count: number) {
  return { content: { status: 'ok', execution_count: count } };
}

let counter = 0;
function fakeCell(source: string, metadata: { [k: string]: unknown } = {}) {
  const node = document.createElement('div');
  node.className = 'jp-Cell';
  const id = `cell-${++counter}`;
  const model = {
    type: 'code',
    metadata,
    executionCount: null as number | null,
    executionState: 'idle',
    trusted: false,
    getMetadata: (key: string) => metadata[key],
    sharedModel: {
      getSource: () => cell.source,
      setSource: (text: string) => void (cell.source = text),
      getId: () => id,
      transact: (f: () => void) => f()
    },
    clearExecution: vi.fn()
  };
  const cell = { node, model, outputArea: { future: null }, isDisposed: false, outputHidden: false, source, metadata };
  return cell;
}

/**
 * A notebook of code cells, its panel, its kernel (Python, nbprofiler ready; it made the report of
 * TOKEN, as nbprofiler.render.origin.made_here answers) and a tracker that finds it.
 */
function fakeNotebook(sources: string[]) {
  const widgets = sources.map(s => fakeCell(s));
  const node = document.createElement('div');
  widgets.forEach(w => node.appendChild(w.node));
  const asked: string[] = [];
  const answer = (text: string) => ({
    done: Promise.resolve({ content: { status: 'ok', user_expressions: { nbprofiler: { status: 'ok', data: { 'text/plain': text } } } } })
  });
  const kernel = {
    name: 'python3',
    info: Promise.resolve({ language_info: { name: 'python' } }),
    requestExecute: (request: { user_expressions: { nbprofiler: string } }) => {
      const expression = request.user_expressions.nbprofiler;
      asked.push(expression);
      if (expression.includes('made_here')) {
        return answer(expression === madeHereExpression(TOKEN) ? 'True' : 'False');
      }
      return answer("'ok'");
    }
  };
  const sessionContext = { ready: Promise.resolve(), session: { kernel }, hasNoKernel: false };
  const panel = {
    node,
    sessionContext,
    content: { widgets },
    model: {
      sharedModel: {
        insertCell: (index: number, cell: { source: string; metadata: { [k: string]: unknown } }) => {
          const w = fakeCell(cell.source, cell.metadata);
          widgets.splice(index, 0, w);
          node.insertBefore(w.node, node.children[index] ?? null);
        }
      }
    }
  };
  document.body.appendChild(node);
  const tracker = { find: (fn: (p: unknown) => boolean) => [panel].find(fn) };
  return { panel, widgets, tracker: tracker as any, sessionContext, asked };
}

/** The saved-report view of the V100 run (by default as this kernel made it), as an output of `cell`;
 * its "Try it" button for `kind`. */
function showReport(cell: { node: HTMLElement }, kind = 'dataloader_workers', payload: object = madeHere): HTMLButtonElement {
  const view = new ReportView(parseReport(payload));
  cell.node.appendChild(view.node);
  return view.node.querySelector(`.nbp-card[data-kind="${kind}"] button.nbp-try`) as HTMLButtonElement;
}

const TRAINING = '%%torchprofile --active 3\nfor x, y in train_loader:\n    train_step(x, y)';

beforeEach(() => {
  calls.order.length = 0;
  calls.notify.length = 0;
  calls.executeCell.mockReset();
  calls.executeOutput.mockReset();
  calls.executeCell.mockImplementation(async (cell: any) => {
    calls.order.push(`run ${cell.source.split('\n')[0]}`);
    return okReply(7);
  });
  calls.executeOutput.mockImplementation(async (code: string, _area: unknown, _session: unknown, metadata: any) => {
    calls.order.push(`profile ${code.split('\n')[0]} (${metadata.cellId})`);
    return okReply(8);
  });
});

afterEach(() => {
  document.body.textContent = '';
});

describe('the "Try it" button', () => {
  it('sits next to Copy in every card with code, naming its suggestion, with the by-hand line', () => {
    const view = new ReportView(parseReport(v100));
    const cards = Array.from(view.node.querySelectorAll('.nbp-card'));
    expect(cards.map(c => c.querySelector('button.nbp-try')?.getAttribute('data-nbp-kind') ?? null)).toEqual(
      v100.suggestions.map((s: any) => (s.code ? s.kind : null))
    );
    for (const card of cards) {
      const actions = card.querySelector('.nbp-code-actions')!;
      expect(Array.from(actions.children).map(b => `${b.className}:${b.textContent}`)).toEqual(['nbp-try:Try it', 'nbp-copy:Copy']);
      expect((actions.querySelector('.nbp-try') as HTMLButtonElement).type).toBe('button');
      expect(card.querySelector('.nbp-try-line')!.textContent).toBe(
        'To try it: paste the code in a new cell above this one, run it, then re-run this cell with %%torchprofile --compare.'
      );
    }
  });

  it('shows only where the extension put its class on the body; the by-hand line shows elsewhere', () => {
    const style = document.createElement('style');
    style.textContent = readFileSync(join(__dirname, '..', 'style', 'base.css'), 'utf-8');
    document.head.appendChild(style);
    const view = new ReportView(parseReport(v100));
    document.body.appendChild(view.node);
    const button = view.node.querySelector('.nbp-try') as HTMLElement;
    const line = view.node.querySelector('.nbp-try-line') as HTMLElement;
    try {
      expect([getComputedStyle(button).display, getComputedStyle(line).display]).toEqual(['none', 'block']);
      document.body.classList.add(LAB_CLASS);
      expect([getComputedStyle(button).display, getComputedStyle(line).display]).toEqual(['inline-block', 'none']);
    } finally {
      document.body.classList.remove(LAB_CLASS);
      style.remove();
    }
  });

  it('reads the kind, the title, the code and the report\'s token or origin from the extension\'s card', () => {
    const view = new ReportView(parseReport(madeHere));
    const request = readTryRequest(view.node.querySelector('.nbp-card[data-kind="dataloader_workers"] .nbp-try')!);
    expect(request).toEqual({ kind: 'dataloader_workers', title: loaderSuggestion.title, code: loaderSuggestion.code, token: TOKEN, origin: '' });
    for (const [payload, origin] of [
      [loaded, LOADED],
      [v100, ''] // written before the payload said where its report came from
    ] as const) {
      const card = new ReportView(parseReport(payload)).node.querySelector('.nbp-card[data-kind="dataloader_workers"] .nbp-try')!;
      expect(readTryRequest(card)).toMatchObject({ token: null, origin });
    }
    const hostile = readTryRequest(view.node.querySelector('.nbp-card[data-kind="hostile"] .nbp-try')!) as { title: string };
    expect(hostile.title).toBe(v100.suggestions.find((s: any) => s.kind === 'hostile').title);
  });

  it('reads a card of nbprofiler\'s HTML and explorer (.nbp .card), from its text only', () => {
    // The markup of nbprofiler/render/html.py suggestion_card.
    const host = document.createElement('div');
    host.className = 'nbp';
    host.innerHTML =
      '<div class="card high"><b>Load batches &lt;b&gt;in workers&lt;/b&gt;</b> <span class="how">[high]</span>' +
      '<div>Expected gain: up to 1.4×</div><div><button class="nbp-copy-code" type="button">Copy</button>' +
      '<button class="nbp-try" type="button" data-nbp-kind="dataloader_workers" data-nbp-report="' + TOKEN + '">Try it</button>' +
      '<pre>train_loader = DataLoader(ds, &lt;num_workers&gt;=4)\n</pre></div><div class="nbp-try-line">To try it: …</div></div>';
    document.body.appendChild(host);
    expect(readTryRequest(host.querySelector('.nbp-try')!)).toEqual({
      kind: 'dataloader_workers',
      title: 'Load batches <b>in workers</b>',
      code: 'train_loader = DataLoader(ds, <num_workers>=4)\n',
      token: TOKEN,
      origin: ''
    });
    host.querySelector('pre')!.remove();
    expect(readTryRequest(host.querySelector('.nbp-try')!)).toBe('This suggestion card has no code to try.');
  });

  it('marks the tried cell with the suggestion\'s title on one line, and names the kind in the flags', () => {
    expect(triedMarker(`Hostile\n title ${HOSTILE_SCRIPT}`)).toBe(`# nbprofiler: trying "Hostile title ${HOSTILE_SCRIPT}"`);
    expect(tryFlags('dataloader_workers')).toEqual(['--compare', '--tried', 'dataloader_workers']);
    expect(tryFlags('a kind; rm')).toEqual(['--compare', '--tried', "'a kind; rm'"]);
  });
});

describe('clicking "Try it"', () => {
  it('inserts the marked cell above the profiled one, runs it, then re-profiles with --compare --tried', async () => {
    const { widgets, tracker } = fakeNotebook(['import torch', TRAINING, 'print("after")']);
    const profiled = widgets[1];
    const button = showReport(profiled);
    await onTryClick(tracker, button);

    // Above: Run All runs the fix, then the profile, and so reproduces the comparison the notebook shows.
    expect(widgets.map(w => w.source.split('\n')[0])).toEqual([
      'import torch',
      `# nbprofiler: trying "${loaderSuggestion.title}"`,
      '%%torchprofile --active 3',
      'print("after")'
    ]);
    const tried = widgets[1];
    expect(widgets[2]).toBe(profiled);
    expect(tried.source).toBe(`# nbprofiler: trying "${loaderSuggestion.title}"\n${loaderSuggestion.code.trimEnd()}`);
    expect(tried.metadata).toEqual({ nbprofiler: { tried: 'dataloader_workers' } });
    // The new cell ran first, as JupyterLab runs a cell; then the profiled cell, source unchanged.
    expect(calls.executeCell).toHaveBeenCalledTimes(1);
    expect(calls.executeCell.mock.calls[0][0]).toBe(tried);
    expect(calls.order).toEqual([
      `run # nbprofiler: trying "${loaderSuggestion.title}"`,
      `profile %%torchprofile --active 3 --compare --tried dataloader_workers (${profiled.model.sharedModel.getId()})`
    ]);
    expect(calls.executeOutput.mock.calls[0][0]).toBe(
      '%%torchprofile --active 3 --compare --tried dataloader_workers\nfor x, y in train_loader:\n    train_step(x, y)'
    );
    expect(profiled.model.sharedModel.getSource()).toBe(TRAINING);
    expect(profiled.model.executionCount).toBe(8);
    expect(calls.notify).toEqual([]);
    expect(button.disabled).toBe(false);
  });

  it('keeps one cell per kind tried above the profiled cell: another kind goes below the first, the same kind rewrites its cell', async () => {
    const { widgets, tracker } = fakeNotebook(['import torch', TRAINING]);
    const profiled = widgets[1];
    const other = v100.suggestions.find((s: any) => s.code && s.kind !== 'dataloader_workers');
    await onTryClick(tracker, showReport(profiled));
    await onTryClick(tracker, showReport(profiled, other.kind));
    const marker = (title: string) => `# nbprofiler: trying "${title}"`;
    // In the order tried, so that Run All replays both changes, then the profile.
    expect(widgets.map(w => w.source.split('\n')[0])).toEqual(['import torch', marker(loaderSuggestion.title), marker(other.title), '%%torchprofile --active 3']);
    expect(widgets[2].metadata).toEqual({ nbprofiler: { tried: other.kind } });
    // The same suggestion again, now from a report this kernel did not make: its cell is rewritten, not doubled.
    await onTryClick(tracker, showReport(profiled, 'dataloader_workers', loaded));
    expect(widgets.map(w => w.source.split('\n')[0])).toEqual(['import torch', marker(loaderSuggestion.title), marker(other.title), '%%torchprofile --active 3']);
    expect(widgets[1].source.split('\n')[1]).toMatch(/^# nbprofiler: Inserted, not run: /);
    // A marked cell that is not right above the profiled cell (another cell between) is left alone.
    const { widgets: cells, tracker: tracker2 } = fakeNotebook([TRAINING]);
    await onTryClick(tracker2, showReport(cells[0]));
    cells.splice(1, 0, fakeCell('print("between")'));
    await onTryClick(tracker2, showReport(cells[2]));
    expect(cells.map(w => w.source.split('\n')[0])).toEqual([marker(loaderSuggestion.title), 'print("between")', marker(loaderSuggestion.title), '%%torchprofile --active 3']);
  });

  it('gives a cell profiled with "Profile cell" (no magic line) the magic line with the flags', async () => {
    const plain = 'for x, y in train_loader:\n    train_step(x, y)';
    const { widgets, tracker } = fakeNotebook([plain]);
    const profiled = widgets[0];
    await onTryClick(tracker, showReport(profiled));
    expect(calls.executeOutput.mock.calls[0][0]).toBe(`%%torchprofile --compare --tried dataloader_workers\n${plain}`);
    expect(profiled.model.sharedModel.getSource()).toBe(plain);
  });

  it('is disabled while it runs: a second click does nothing', async () => {
    const { widgets, tracker } = fakeNotebook([TRAINING]);
    const button = showReport(widgets[0]);
    const gate = new PromiseDelegate<void>();
    calls.executeCell.mockImplementation(async () => {
      await gate.promise;
      return okReply(2);
    });
    // Through the page's delegated handler, as a user clicks.
    const listener = tryClickListener(tracker);
    document.addEventListener('click', listener);
    try {
      button.click();
      await new Promise(r => setTimeout(r, 10));
      expect(button.disabled).toBe(true);
      expect(button.textContent).toBe('Trying…');
      button.click();
      await onTryClick(tracker, button);
      await new Promise(r => setTimeout(r, 10));
      expect(widgets.length).toBe(2);
      expect(calls.executeCell).toHaveBeenCalledTimes(1);
      gate.resolve();
      await new Promise(r => setTimeout(r, 10));
    } finally {
      document.removeEventListener('click', listener);
    }
    expect(calls.executeOutput).toHaveBeenCalledTimes(1);
    expect(button.disabled).toBe(false);
    expect(button.textContent).toBe('Try it');
  });

  it('stops with a notification when the suggestion\'s code fails, without re-profiling', async () => {
    const { widgets, tracker } = fakeNotebook([TRAINING]);
    calls.executeCell.mockImplementation(async () => ({
      content: { status: 'error', ename: 'NameError', evalue: "name 'train_ds' is not defined", execution_count: 3 }
    }));
    const button = showReport(widgets[0]);
    await onTryClick(tracker, button);
    expect(widgets.length).toBe(2);
    expect(calls.executeOutput).not.toHaveBeenCalled();
    expect(calls.notify).toEqual([
      [
        'error',
        "The suggestion's code failed in the new cell above the profiled one (NameError: name 'train_ds' is not defined). " +
          'Fix it there and run it, then re-run the profiled cell with %%torchprofile --compare.'
      ]
    ]);
    expect(button.disabled).toBe(false);
  });

  it('says so when the button is not in a notebook cell (an output view)', async () => {
    const { tracker } = fakeNotebook([TRAINING]);
    const elsewhere = document.createElement('div');
    document.body.appendChild(elsewhere);
    await onTryClick(tracker, showReport({ node: elsewhere }));
    expect(calls.executeCell).not.toHaveBeenCalled();
    expect(calls.notify).toEqual([['warning', '"Try it" works on a report shown under its notebook cell.']]);
  });

  it('leaves other clicks alone', () => {
    const { widgets, tracker } = fakeNotebook([TRAINING]);
    const view = new ReportView(parseReport(v100));
    widgets[0].node.appendChild(view.node);
    const event = new MouseEvent('click', { bubbles: true, cancelable: true });
    view.node.querySelector('.nbp-card-title')!.dispatchEvent(event);
    tryClickListener(tracker)(event);
    expect(event.defaultPrevented).toBe(false);
    expect(calls.executeCell).not.toHaveBeenCalled();
  });
});

describe('"Try it" on a report this kernel did not make', () => {
  const notRun = (why: string) => `Inserted, not run: ${why}; read the code, then run the cell.`;

  it('inserts the code of a loaded report\'s card without running it, and says why in the cell and a notification', async () => {
    const { widgets, tracker, asked } = fakeNotebook([TRAINING]);
    const button = showReport(widgets[0], 'dataloader_workers', loaded);
    await onTryClick(tracker, button);

    expect(widgets.map(w => w.source.split('\n')[0])).toEqual([`# nbprofiler: trying "${loaderSuggestion.title}"`, '%%torchprofile --active 3']);
    expect(widgets[0].source).toBe(
      `# nbprofiler: trying "${loaderSuggestion.title}"\n# nbprofiler: ${notRun(LOADED)}\n${loaderSuggestion.code.trimEnd()}`
    );
    expect(widgets[0].metadata).toEqual({ nbprofiler: { tried: 'dataloader_workers' } });
    // Nothing ran: not the new cell, not the profiled cell; the kernel was not even asked (no token to confirm).
    expect(calls.executeCell).not.toHaveBeenCalled();
    expect(calls.executeOutput).not.toHaveBeenCalled();
    expect(asked).toEqual([]);
    expect(calls.notify).toEqual([['info', notRun(LOADED)]]);
    expect(button.disabled).toBe(false);
  });

  it('runs nothing for a token the kernel did not issue (an earlier kernel\'s card, or a forged one)', async () => {
    const { widgets, tracker, asked } = fakeNotebook([TRAINING]);
    const other = 'fedcba9876543210fedcba9876543210';
    await onTryClick(tracker, showReport(widgets[0], 'dataloader_workers', { ...madeHere, report_token: other }));
    expect(asked).toContain(madeHereExpression(other));
    expect(calls.executeCell).not.toHaveBeenCalled();
    expect(calls.executeOutput).not.toHaveBeenCalled();
    const why = 'this report was not made by this kernel (an earlier kernel, or another notebook, made it)';
    expect(widgets[0].source.split('\n')[1]).toBe(`# nbprofiler: ${notRun(why)}`);
    expect(calls.notify).toEqual([['info', notRun(why)]]);
  });

  it('sends the kernel nothing but a token of 32 hex digits', async () => {
    const { widgets, tracker, asked } = fakeNotebook([TRAINING]);
    const forged = "0123456789abcdef0123456789abcdef') or __import__('os').system('touch pwned'"; // starts with TOKEN
    await onTryClick(tracker, showReport(widgets[0], 'dataloader_workers', { ...madeHere, report_token: forged }));
    expect(asked).toEqual([]);
    expect(calls.executeCell).not.toHaveBeenCalled();
    expect(widgets[0].source.split('\n')[1]).toBe(`# nbprofiler: ${notRun('this report was not made by this kernel')}`);
    expect(() => madeHereExpression(forged)).toThrow();
    // What tests/advice/test_code_from_files.py has IPython evaluate: nbprofiler.render.origin.made_here.
    expect(madeHereExpression(TOKEN)).toBe(`__import__('nbprofiler.render.origin', fromlist=['made_here']).made_here('${TOKEN}')`);
  });

  it('keeps the line saying why on one line of the cell, whatever the card says', async () => {
    const { widgets, tracker } = fakeNotebook([TRAINING]);
    const origin = 'loaded from x\n__import__("os").system("touch pwned")\r\u2028y';
    await onTryClick(tracker, showReport(widgets[0], 'dataloader_workers', { ...loaded, origin }));
    const lines = widgets[0].source.split(/\r\n|\r|\n/);
    expect(lines[1]).toBe(`# nbprofiler: ${notRun('loaded from x __import__("os").system("touch pwned") y')}`);
    expect(lines.slice(2).join('\n')).toBe(loaderSuggestion.code.trimEnd());
  });

  it('reads the same from a card of nbprofiler\'s HTML: runs with the kernel\'s token, not with an origin', async () => {
    const card = (attrs: string) =>
      '<div class="nbp"><div class="card high"><b>Use workers</b><div>' +
      `<button class="nbp-try" type="button" data-nbp-kind="dataloader_workers" ${attrs}>Try it</button>` +
      '<pre>train_loader = DataLoader(train_ds, num_workers=2)\n</pre></div></div></div>';
    for (const [attrs, runs] of [
      [`data-nbp-report="${TOKEN}"`, true],
      ['data-nbp-origin="this report was loaded from the trace file v100.json"', false]
    ] as const) {
      calls.executeCell.mockClear();
      const { widgets, tracker } = fakeNotebook([TRAINING]);
      widgets[0].node.insertAdjacentHTML('beforeend', card(attrs));
      await onTryClick(tracker, widgets[0].node.querySelector('button.nbp-try') as HTMLButtonElement);
      expect(calls.executeCell).toHaveBeenCalledTimes(runs ? 1 : 0);
      expect(widgets[0].source.includes('Inserted, not run: this report was loaded from the trace file v100.json')).toBe(!runs);
    }
  });
});

describe('the card\'s code', () => {
  it('wraps inside the card, with the buttons above it rather than over it', () => {
    const style = document.createElement('style');
    style.textContent = readFileSync(join(__dirname, '..', 'style', 'base.css'), 'utf-8');
    document.head.appendChild(style);
    try {
      const view = new ReportView(parseReport(madeHere));
      document.body.appendChild(view.node);
      const code = view.node.querySelector('.nbp-card[data-kind="dataloader_workers"] .nbp-code') as HTMLElement;
      for (const element of [code.querySelector('pre')!, code.querySelector('pre code')!]) {
        const computed = getComputedStyle(element);
        expect([computed.whiteSpace, computed.overflowWrap]).toEqual(['pre-wrap', 'anywhere']);
      }
      expect(getComputedStyle(code.querySelector('.nbp-code-actions')!).position).not.toBe('absolute');
    } finally {
      style.remove();
    }
  });
});
