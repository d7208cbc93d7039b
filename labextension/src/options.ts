/**
 * The options of "Profile cell with options…": the magic's flags, their
 * dialog, and where the last choice is kept (the notebook's metadata).
 */
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { h } from './report/dom';

export type DeviceChoice = 'auto' | 'cpu' | 'cuda';

export interface IProfileOptions {
  wait: number;
  warmup: number;
  active: number;
  repeat: number;
  device: DeviceChoice;
  stack: boolean;
  modules: boolean;
  /** Record input shapes (`--shapes`): group operators by shape. */
  shapes: boolean;
  /** The notebook variable that gets the Report (`-o`); '' for none. */
  output: string;
  /** Where to write the Chrome trace (`--trace`), a .json or .json.gz path; '' for none. */
  trace: string;
}

/** The magic's own defaults (nbprofiler.options.ProfileOptions). */
export const DEFAULT_OPTIONS: Readonly<IProfileOptions> = Object.freeze({
  wait: 1,
  warmup: 1,
  active: 3,
  repeat: 1,
  device: 'auto',
  stack: false,
  modules: false,
  shapes: false,
  output: '',
  trace: ''
});

/** Notebook metadata key: `metadata.nbprofiler.profile_options`. */
export const METADATA_KEY = 'nbprofiler';

const MINIMUM: { [K in 'wait' | 'warmup' | 'active' | 'repeat']: number } = {
  wait: 0,
  warmup: 0,
  active: 1,
  repeat: 0
};

const DEVICES: DeviceChoice[] = ['auto', 'cpu', 'cuda'];

const PYTHON_KEYWORDS = new Set(
  ('False None True and as assert async await break class continue def del elif else except finally for from ' +
    'global if import in is lambda nonlocal not or pass raise return try while with yield').split(' ')
);

/** Why `name` cannot be the `-o` variable, or null when it can ('' means no variable). */
export function outputError(name: string): string | null {
  if (name === '') {
    return null;
  }
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name) || PYTHON_KEYWORDS.has(name)) {
    return `-o: "${name}" is not a Python variable name (letters, digits and _, not starting with a digit, not a keyword)`;
  }
  return null;
}

/** Why `path` cannot be the `--trace` file, or null when it can ('' means no file); the magic's own rule. */
export function traceError(path: string): string | null {
  if (path === '') {
    return null;
  }
  if (/[\n\r\0]/.test(path) || path.trim() !== path) {
    return '--trace: the path has a line break or surrounding spaces';
  }
  if (!/\.json(\.gz)?$/.test(path) || /(^|\/)\.json(\.gz)?$/.test(path)) {
    return `--trace: the file name must end in .json or .json.gz, got "${path}"`;
  }
  return null;
}

/** Every reason `options` cannot run, in the form's order; empty when they can. */
export function optionErrors(options: IProfileOptions): string[] {
  return [outputError(options.output), traceError(options.trace)].filter((e): e is string => e !== null);
}

function text(value: unknown): string {
  return typeof value === 'string' ? value.trim() : '';
}

function wholeNumber(value: unknown, min: number, fallback: number): number {
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isFinite(n)) {
    return fallback;
  }
  return Math.max(min, Math.min(1_000_000, Math.floor(n)));
}

/** Valid options from anything (metadata from a file, form values), defaults for what is missing or wrong. */
export function normalizeOptions(value: unknown): IProfileOptions {
  const v = (typeof value === 'object' && value !== null ? value : {}) as { [key: string]: unknown };
  return {
    wait: wholeNumber(v.wait, MINIMUM.wait, DEFAULT_OPTIONS.wait),
    warmup: wholeNumber(v.warmup, MINIMUM.warmup, DEFAULT_OPTIONS.warmup),
    active: wholeNumber(v.active, MINIMUM.active, DEFAULT_OPTIONS.active),
    repeat: wholeNumber(v.repeat, MINIMUM.repeat, DEFAULT_OPTIONS.repeat),
    device: DEVICES.includes(v.device as DeviceChoice) ? (v.device as DeviceChoice) : DEFAULT_OPTIONS.device,
    stack: v.stack === true,
    modules: v.modules === true,
    shapes: v.shapes === true,
    output: outputError(text(v.output)) === null ? text(v.output) : '',
    trace: traceError(text(v.trace)) === null ? text(v.trace) : ''
  };
}

/**
 * The magic's flags for `options`: those that differ from the magic's
 * defaults, or (`explicit`) every schedule and device flag, so that they
 * override flags already on a `%%torchprofile` line (the last one wins).
 */
export function optionFlags(options: IProfileOptions, explicit = false): string[] {
  const flags: string[] = [];
  for (const key of ['wait', 'warmup', 'active', 'repeat'] as const) {
    if (explicit || options[key] !== DEFAULT_OPTIONS[key]) {
      flags.push(`--${key}`, String(options[key]));
    }
  }
  if (explicit || options.device !== DEFAULT_OPTIONS.device) {
    flags.push('--device', options.device);
  }
  if (options.stack) {
    flags.push('--stack');
  }
  if (options.modules) {
    flags.push('--modules');
  }
  if (options.shapes) {
    flags.push('--shapes');
  }
  if (options.output && outputError(options.output) === null) {
    flags.push('-o', options.output);
  }
  if (options.trace && traceError(options.trace) === null) {
    flags.push('--trace', quoteFlag(options.trace));
  }
  return flags;
}

/** The first line of the code the kernel runs. */
export function magicLine(flags: string[]): string {
  return ['%%torchprofile', ...flags].join(' ');
}

const MAGIC_LINE = /^(\s*%%torchprofile\b[^\n]*)(\n|$)/;

/**
 * The cell as it is sent to the kernel; the cell's own source is not changed.
 *
 * A plain cell gets a `%%torchprofile` line with the flags of `options` that
 * differ from the defaults. A cell that already starts with `%%torchprofile`
 * runs with its own flags, followed by every flag of `options` when given.
 * `extra` flags (such as `--compare --tried KIND` for "Try it") come last, so
 * they win over the same flags earlier on the line.
 */
export function profiledCode(source: string, options: IProfileOptions | null, extra: string[] = []): string {
  const m = MAGIC_LINE.exec(source);
  if (m) {
    const flags = [...(options ? optionFlags(options, true) : []), ...extra];
    if (!flags.length) {
      return source;
    }
    return `${m[1].trimEnd()} ${flags.join(' ')}` + m[2] + source.slice(m[0].length);
  }
  return `${magicLine([...(options ? optionFlags(options) : []), ...extra])}\n${source}`;
}

/** A word as the magic's argument parser (shlex, posix) reads it back unchanged. */
export function quoteFlag(word: string): string {
  return /^[\w.,:=+\/-]+$/.test(word) ? word : `'${word.replace(/'/g, `'"'"'`)}'`;
}

interface IMetadataHolder {
  getMetadata(key: string): unknown;
  setMetadata(key: string, value: unknown): void;
}

export function loadOptions(model: IMetadataHolder | null | undefined): IProfileOptions {
  const md = model?.getMetadata(METADATA_KEY) as { profile_options?: unknown } | undefined;
  return normalizeOptions(md?.profile_options);
}

export function saveOptions(model: IMetadataHolder, options: IProfileOptions): void {
  const md = model.getMetadata(METADATA_KEY);
  const base = typeof md === 'object' && md !== null ? (md as object) : {};
  model.setMetadata(METADATA_KEY, { ...base, profile_options: { ...options } });
}

/** The body of the options dialog; `getValue()` gives the chosen options. */
export class OptionsForm extends Widget {
  private readonly inputs: { [K in keyof IProfileOptions]: HTMLInputElement | HTMLSelectElement };
  private readonly preview: HTMLElement;
  private readonly errors: { output: HTMLElement; trace: HTMLElement };

  constructor(initial: IProfileOptions, private readonly source = '') {
    super();
    this.addClass('nbp-OptionsForm');
    const num = (key: 'wait' | 'warmup' | 'active' | 'repeat') =>
      h('input', {
        type: 'number',
        min: MINIMUM[key],
        step: 1,
        value: initial[key],
        name: key,
        class: 'jp-mod-styled',
        'aria-describedby': 'nbp-schedule-help'
      });
    const device = h('select', { name: 'device', class: 'jp-mod-styled' });
    for (const d of DEVICES) {
      const opt = h('option', { value: d }, d);
      opt.selected = d === initial.device;
      device.appendChild(opt);
    }
    const check = (key: 'stack' | 'modules' | 'shapes') => {
      const box = h('input', { type: 'checkbox', name: key });
      box.checked = initial[key];
      return box;
    };
    this.inputs = {
      wait: num('wait'),
      warmup: num('warmup'),
      active: num('active'),
      repeat: num('repeat'),
      device,
      stack: check('stack'),
      modules: check('modules'),
      shapes: check('shapes'),
      output: h('input', {
        type: 'text', name: 'output', class: 'jp-mod-styled', value: initial.output, placeholder: 'e.g. run',
        spellcheck: 'false', 'aria-describedby': 'nbp-output-error'
      }),
      trace: h('input', {
        type: 'text', name: 'trace', class: 'jp-mod-styled', value: initial.trace, placeholder: 'e.g. traces/run.json.gz',
        spellcheck: 'false', 'aria-describedby': 'nbp-trace-error'
      })
    };
    this.errors = {
      output: h('span', { class: 'nbp-field-error', id: 'nbp-output-error', role: 'alert' }),
      trace: h('span', { class: 'nbp-field-error', id: 'nbp-trace-error', role: 'alert' })
    };
    const field = (label: string, input: HTMLElement, help?: string) =>
      h('label', { class: 'nbp-field' }, h('span', { class: 'nbp-field-label' }, label), input, help ? h('span', { class: 'nbp-field-help' }, help) : null);
    this.preview = h('code', { class: 'nbp-preview' });
    this.node.appendChild(
      h(
        'div',
        null,
        h(
          'fieldset',
          null,
          h('legend', null, 'Schedule (steps)'),
          h(
            'div',
            { class: 'nbp-grid4' },
            field('wait', this.inputs.wait),
            field('warmup', this.inputs.warmup),
            field('active', this.inputs.active),
            field('repeat', this.inputs.repeat)
          ),
          h(
            'p',
            { class: 'nbp-field-help', id: 'nbp-schedule-help' },
            'Each cycle skips `wait` steps, warms up for `warmup`, then records `active` steps; `repeat` cycles (0: until the cell ends).'
          )
        ),
        field('device', this.inputs.device, 'auto: CUDA when the kernel has a GPU, else CPU'),
        h(
          'label',
          { class: 'nbp-check' },
          this.inputs.stack,
          ' record Python stacks (--stack): fills the Cell lines tab; slower'
        ),
        h(
          'label',
          { class: 'nbp-check' },
          this.inputs.modules,
          ' time each nn.Module (--modules): fills the Modules tab'
        ),
        h(
          'label',
          { class: 'nbp-check' },
          this.inputs.shapes,
          ' record input shapes (--shapes): group operators by shape'
        ),
        field('keep the report in (-o)', this.inputs.output, 'a notebook variable that gets the Report'),
        this.errors.output,
        field('write the trace to (--trace)', this.inputs.trace, 'a .json or .json.gz file, for Perfetto'),
        this.errors.trace,
        h('div', { class: 'nbp-preview-line' }, 'Runs as: ', this.preview)
      )
    );
    for (const input of Object.values(this.inputs)) {
      input.addEventListener('input', () => this.updatePreview());
      input.addEventListener('change', () => this.updatePreview());
    }
    this.updatePreview();
  }

  /**
   * The chosen options. `output` and `trace` are as typed (trimmed), even when invalid,
   * so that the caller can refuse them with `optionErrors`; the form shows why meanwhile.
   */
  getValue(): IProfileOptions {
    const i = this.inputs;
    const chosen = normalizeOptions({
      wait: i.wait.value,
      warmup: i.warmup.value,
      active: i.active.value,
      repeat: i.repeat.value,
      device: i.device.value,
      stack: (i.stack as HTMLInputElement).checked,
      modules: (i.modules as HTMLInputElement).checked,
      shapes: (i.shapes as HTMLInputElement).checked
    });
    return { ...chosen, output: i.output.value.trim(), trace: i.trace.value.trim() };
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    this.updatePreview(); // now in the dialog: set its "Profile" button
  }

  /** Whether the chosen options can run (no error shown). */
  get isValid(): boolean {
    return optionErrors(this.getValue()).length === 0;
  }

  private updatePreview(): void {
    const value = this.getValue();
    for (const key of ['output', 'trace'] as const) {
      const error = key === 'output' ? outputError(value.output) : traceError(value.trace);
      this.errors[key].textContent = error ?? '';
      this.inputs[key].setAttribute('aria-invalid', error ? 'true' : 'false');
    }
    this.preview.textContent = profiledCode(this.source, value).split('\n')[0];
    // Inside the dialog, "Profile" waits for valid options.
    const accept = this.node.closest('.jp-Dialog-content')?.querySelector<HTMLButtonElement>('.jp-mod-accept');
    if (accept) {
      accept.disabled = !this.isValid;
      accept.title = this.isValid ? '' : optionErrors(value).join('; ');
    }
  }
}
