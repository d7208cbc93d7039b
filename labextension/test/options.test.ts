import { Widget } from '@lumino/widgets';
import { describe, expect, it } from 'vitest';

import { parseReprString, prepareMessage, PREPARE_EXPRESSION } from '../src/prepare';
import {
  DEFAULT_OPTIONS,
  loadOptions,
  magicLine,
  normalizeOptions,
  optionErrors,
  optionFlags,
  OptionsForm,
  outputError,
  profiledCode,
  quoteFlag,
  saveOptions,
  traceError
} from '../src/options';

describe('profile options', () => {
  it('emits only the flags that differ from the magic defaults', () => {
    expect(optionFlags({ ...DEFAULT_OPTIONS })).toEqual([]);
    expect(optionFlags({ ...DEFAULT_OPTIONS, active: 5, wait: 0, device: 'cpu', stack: true, modules: true })).toEqual([
      '--wait', '0', '--active', '5', '--device', 'cpu', '--stack', '--modules'
    ]);
    expect(magicLine(['--active', '5'])).toBe('%%torchprofile --active 5');
  });

  it('prefixes the cell source with the magic line, leaving the source as it is', () => {
    const source = 'for x, y in loader:\n    step(x, y)\n';
    expect(profiledCode(source, null)).toBe(`%%torchprofile\n${source}`);
    expect(profiledCode(source, { ...DEFAULT_OPTIONS, stack: true })).toBe(`%%torchprofile --stack\n${source}`);
  });

  it('runs a %%torchprofile cell as it is, or with every chosen flag after its own', () => {
    const cell = '%%torchprofile --active 5 -o run\nfor b in loader:\n    step(b)';
    expect(profiledCode(cell, null)).toBe(cell);
    expect(profiledCode(cell, { ...DEFAULT_OPTIONS, modules: true })).toBe(
      '%%torchprofile --active 5 -o run --wait 1 --warmup 1 --active 3 --repeat 1 --device auto --modules\nfor b in loader:\n    step(b)'
    );
    expect(profiledCode('%%torchprofile', { ...DEFAULT_OPTIONS })).toBe(
      '%%torchprofile --wait 1 --warmup 1 --active 3 --repeat 1 --device auto'
    );
  });

  it('adds extra flags last on the magic line, leaving the body as it is', () => {
    const flags = ['--compare', '--tried', 'dataloader_workers'];
    const cell = '%%torchprofile --active 5 -o run   \nfor b in loader:\n    step(b)\n';
    expect(profiledCode(cell, null, flags)).toBe(
      '%%torchprofile --active 5 -o run --compare --tried dataloader_workers\nfor b in loader:\n    step(b)\n'
    );
    // With options too: theirs first, so the extra flags win a repeated one.
    expect(profiledCode(cell, { ...DEFAULT_OPTIONS, stack: true }, flags).split('\n')[0]).toBe(
      '%%torchprofile --active 5 -o run --wait 1 --warmup 1 --active 3 --repeat 1 --device auto --stack --compare --tried dataloader_workers'
    );
    // A plain cell, profiled with "Profile cell" before: a magic line of its own.
    const plain = 'for b in loader:\n    step(b)';
    expect(profiledCode(plain, null, flags)).toBe(`%%torchprofile --compare --tried dataloader_workers\n${plain}`);
    expect(profiledCode(plain, { ...DEFAULT_OPTIONS, active: 2 }, flags)).toBe(
      `%%torchprofile --active 2 --compare --tried dataloader_workers\n${plain}`
    );
    expect(profiledCode(cell, null, [])).toBe(cell);
  });

  it('quotes a flag value only where the magic would split or change it', () => {
    expect(quoteFlag('dataloader_workers')).toBe('dataloader_workers');
    expect(quoteFlag('amp.bf16-autocast')).toBe('amp.bf16-autocast');
    expect(quoteFlag("two words 'and' quotes")).toBe(`'two words '"'"'and'"'"' quotes'`);
    expect(quoteFlag('')).toBe("''");
  });

  it('repairs bad or foreign values', () => {
    expect(normalizeOptions(undefined)).toEqual(DEFAULT_OPTIONS);
    expect(normalizeOptions({ wait: -3, warmup: '2', active: 0, repeat: 2.7, device: 'tpu', stack: 'yes', modules: true })).toEqual({
      ...DEFAULT_OPTIONS,
      wait: 0,
      warmup: 2,
      active: 1,
      repeat: 2,
      modules: true
    });
  });

  it('remembers the last choice in the notebook metadata', () => {
    const store: { [k: string]: unknown } = { nbprofiler: { other: 1 } };
    const model = {
      getMetadata: (k: string) => store[k],
      setMetadata: (k: string, v: unknown) => {
        store[k] = v;
      }
    };
    expect(loadOptions(model)).toEqual(DEFAULT_OPTIONS);
    saveOptions(model, { ...DEFAULT_OPTIONS, active: 7, device: 'cuda' });
    expect(store.nbprofiler).toEqual({ other: 1, profile_options: { ...DEFAULT_OPTIONS, active: 7, device: 'cuda' } });
    expect(loadOptions(model)).toEqual({ ...DEFAULT_OPTIONS, active: 7, device: 'cuda' });
    expect(loadOptions(null)).toEqual(DEFAULT_OPTIONS);
  });
});

describe('options dialog body', () => {
  it('starts from the given options and previews the magic line', () => {
    const form = new OptionsForm({ ...DEFAULT_OPTIONS, active: 4, stack: true });
    const node = form.node;
    const active = node.querySelector('input[name="active"]') as HTMLInputElement;
    expect(active.value).toBe('4');
    expect((node.querySelector('input[name="stack"]') as HTMLInputElement).checked).toBe(true);
    expect(node.querySelector('.nbp-preview')!.textContent).toBe('%%torchprofile --active 4 --stack');
    active.value = '6';
    active.dispatchEvent(new Event('input'));
    const device = node.querySelector('select[name="device"]') as HTMLSelectElement;
    device.value = 'cpu';
    device.dispatchEvent(new Event('change'));
    const modules = node.querySelector('input[name="modules"]') as HTMLInputElement;
    modules.checked = true;
    modules.dispatchEvent(new Event('change'));
    expect(form.getValue()).toEqual({ ...DEFAULT_OPTIONS, active: 6, device: 'cpu', stack: true, modules: true });
    expect(node.querySelector('.nbp-preview')!.textContent).toBe('%%torchprofile --active 6 --device cpu --stack --modules');
    const magicCell = new OptionsForm({ ...DEFAULT_OPTIONS }, '%%torchprofile -o run\nstep()');
    expect(magicCell.node.querySelector('.nbp-preview')!.textContent).toBe(
      '%%torchprofile -o run --wait 1 --warmup 1 --active 3 --repeat 1 --device auto'
    );
    const labels = Array.from(node.querySelectorAll('.nbp-field-label')).map(l => l.textContent);
    expect(labels).toEqual([
      'wait', 'warmup', 'active', 'repeat', 'device', 'keep the report in (-o)', 'write the trace to (--trace)'
    ]);
  });

  it('offers -o, --shapes and --trace, shows why a value is refused, and previews the line', () => {
    const form = new OptionsForm({ ...DEFAULT_OPTIONS }, 'train()');
    const node = form.node;
    const output = node.querySelector('input[name="output"]') as HTMLInputElement;
    const trace = node.querySelector('input[name="trace"]') as HTMLInputElement;
    const shapes = node.querySelector('input[name="shapes"]') as HTMLInputElement;
    const errorOf = (id: string) => node.querySelector(`#${id}`)!.textContent;
    shapes.checked = true;
    shapes.dispatchEvent(new Event('change'));
    output.value = '2run';
    output.dispatchEvent(new Event('input'));
    trace.value = 'my traces/run.txt';
    trace.dispatchEvent(new Event('input'));
    expect(form.isValid).toBe(false);
    expect(errorOf('nbp-output-error')).toContain('"2run" is not a Python variable name');
    expect(errorOf('nbp-trace-error')).toContain('must end in .json or .json.gz');
    expect(output.getAttribute('aria-invalid')).toBe('true');
    expect(optionErrors(form.getValue())).toHaveLength(2);
    // Invalid values never reach the magic line.
    expect(node.querySelector('.nbp-preview')!.textContent).toBe('%%torchprofile --shapes');
    output.value = ' run ';
    output.dispatchEvent(new Event('input'));
    trace.value = 'my traces/run.json.gz';
    trace.dispatchEvent(new Event('input'));
    expect(form.isValid).toBe(true);
    expect(errorOf('nbp-output-error')).toBe('');
    expect(form.getValue()).toEqual({ ...DEFAULT_OPTIONS, shapes: true, output: 'run', trace: 'my traces/run.json.gz' });
    expect(node.querySelector('.nbp-preview')!.textContent).toBe(
      "%%torchprofile --shapes -o run --trace 'my traces/run.json.gz'"
    );
  });

  it('keeps the dialog\'s Profile button disabled while a value is refused', () => {
    const dialog = document.createElement('div');
    dialog.className = 'jp-Dialog-content';
    const accept = document.createElement('button');
    accept.className = 'jp-mod-accept';
    const form = new OptionsForm({ ...DEFAULT_OPTIONS });
    document.body.appendChild(dialog);
    Widget.attach(form, dialog);
    dialog.appendChild(accept);
    const output = form.node.querySelector('input[name="output"]') as HTMLInputElement;
    output.value = 'class';
    output.dispatchEvent(new Event('input'));
    expect(accept.disabled).toBe(true);
    expect(accept.title).toContain('not a Python variable name');
    output.value = 'report';
    output.dispatchEvent(new Event('input'));
    expect(accept.disabled).toBe(false);
    Widget.detach(form);
    dialog.remove();
  });
});

describe('-o, --shapes and --trace', () => {
  it('builds the magic line with them, quoting the path as the magic reads it back', () => {
    expect(optionFlags({ ...DEFAULT_OPTIONS, shapes: true, output: 'run', trace: 'out/t.json' })).toEqual([
      '--shapes', '-o', 'run', '--trace', 'out/t.json'
    ]);
    expect(profiledCode('step()', { ...DEFAULT_OPTIONS, trace: "it's here.json.gz" })).toBe(
      `%%torchprofile --trace 'it'"'"'s here.json.gz'\nstep()`
    );
    // On a %%torchprofile line they come after its own flags, so they win a repeated one.
    expect(profiledCode('%%torchprofile -o a\nstep()', { ...DEFAULT_OPTIONS, output: 'b' }).split('\n')[0]).toBe(
      '%%torchprofile -o a --wait 1 --warmup 1 --active 3 --repeat 1 --device auto -o b'
    );
  });

  it('accepts Python identifiers for -o and .json/.json.gz paths for --trace', () => {
    for (const ok of ['', 'run', '_r2', 'Report_1']) {
      expect(outputError(ok)).toBeNull();
    }
    for (const bad of ['2run', 'my run', 'a-b', 'class', 'None', 'x.y', 'run;']) {
      expect(outputError(bad)).toMatch(/not a Python variable name/);
    }
    for (const ok of ['', 't.json', 'dir/t.json.gz', 'a b/c.json']) {
      expect(traceError(ok)).toBeNull();
    }
    for (const bad of ['t.txt', 'dir/.json', 'a.json\nb', ' t.json', 'json']) {
      expect(traceError(bad)).not.toBeNull();
    }
  });

  it('drops invalid saved values and keeps valid ones', () => {
    expect(normalizeOptions({ output: '1x', trace: 'a.csv', shapes: 'yes' })).toEqual(DEFAULT_OPTIONS);
    expect(normalizeOptions({ output: 'run', trace: 'a.json', shapes: true })).toEqual({
      ...DEFAULT_OPTIONS, output: 'run', trace: 'a.json', shapes: true
    });
  });
});

describe('kernel check', () => {
  it('reads string reprs', () => {
    expect(parseReprString("'ok'")).toBe('ok');
    expect(parseReprString('"no-torch"')).toBe('no-torch');
    expect(parseReprString('ok')).toBe('ok');
  });

  it('words each failure for the user', () => {
    expect(prepareMessage('no-torch', 'python3')).toMatch(/^PyTorch is not installed in the environment of the kernel "python3"/);
    expect(prepareMessage('no-nbprofiler', 'python3')).toContain('%pip install nbprofiler');
    expect(prepareMessage('not-registered', 'python3')).toContain('did not register');
  });

  it('checks torch before loading the extension, in one expression', () => {
    expect(PREPARE_EXPRESSION).toContain("find('torch') is None");
    expect(PREPARE_EXPRESSION).toContain("run_line_magic('load_ext', 'nbprofiler')");
    expect(PREPARE_EXPRESSION.indexOf("find('torch')")).toBeLessThan(PREPARE_EXPRESSION.indexOf('load_ext'));
  });
});
