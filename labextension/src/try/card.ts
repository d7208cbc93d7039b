/**
 * What a "Try it" button asks for, read from the suggestion card it sits in,
 * and what trying it writes: the marked cell and the flags of the re-run.
 *
 * The cards come from three places (nbprofiler's static HTML and its ipywidgets
 * explorer, `.nbp .card`, and this extension's saved-report view, `.nbp-card`)
 * and share one markup for the button: `button.nbp-try[data-nbp-kind]`, next to
 * the card's `<pre>` of code. Plain DOM, no JupyterLab imports: unit-tested in jsdom.
 *
 * The code runs only where the report was made by the notebook's kernel: its button
 * carries the token that kernel issued (`data-nbp-report`), which run.ts has the
 * kernel confirm first. A card of a report loaded from a file or the run history,
 * of an earlier kernel, or from someone else's notebook, cannot show such a token,
 * and its code is inserted without running (`data-nbp-origin` says where it came from).
 */
import { quoteFlag } from '../options';
import { ITrial } from '../report/types';

/** The class JupyterLab's body gets from this extension: the cards' CSS shows "Try it" under it. */
export const LAB_CLASS = 'nbp-lab';

/** Selector of the "Try it" buttons. */
export const TRY_SELECTOR = 'button.nbp-try';

/** Cell metadata key of a tried cell: `{"nbprofiler": {"tried": KIND}}`. */
export const TRIED_METADATA_KEY = 'nbprofiler';

export interface ITryRequest {
  /** The suggestion's kind (Suggestion.kind), as the magic's `--tried` takes it. */
  kind: string;
  /** The suggestion's title, for the marker line of the new cell. */
  title: string;
  /** The card's code, as shown in its `<pre>`. */
  code: string;
  /** The token of a report made by a kernel (32 hex digits), or null: the code is inserted without running. */
  token: string | null;
  /** Where a report not made by the kernel came from, in words ('' when the card does not say). */
  origin: string;
}

const TOKEN = /^[0-9a-f]{32}$/;

/** The attributes of a "Try it" button that say whether its report was made by a kernel (Python's html.try_button). */
export function trialAttributes(trial: ITrial): { [name: string]: string } {
  return trial.token ? { 'data-nbp-report': trial.token } : { 'data-nbp-origin': trial.origin ?? '' };
}

/** The suggestion a "Try it" button belongs to, or a reason it cannot be tried. */
export function readTryRequest(button: Element): ITryRequest | string {
  const kind = button.getAttribute('data-nbp-kind') ?? '';
  const card = button.closest('.nbp-card, .nbp .card');
  const code = card?.querySelector('pre')?.textContent ?? '';
  if (!kind || !card || !code.trim()) {
    return 'This suggestion card has no code to try.';
  }
  // The extension's cards title themselves in .nbp-card-title, Python's in the card's first <b>.
  const title = card.querySelector('.nbp-card-title') ?? card.querySelector(':scope > b');
  const token = button.getAttribute('data-nbp-report') ?? '';
  return {
    kind,
    title: oneLine(title?.textContent ?? '') || kind,
    code,
    token: TOKEN.test(token) ? token : null,
    origin: oneLine(button.getAttribute('data-nbp-origin') ?? '')
  };
}

/**
 * The expression the kernel evaluates to confirm `token` (32 hex digits, checked here: nothing
 * else from the page reaches the kernel): `True` where that kernel made the report.
 */
export function madeHereExpression(token: string): string {
  if (!TOKEN.test(token)) {
    throw new Error('not a report token');
  }
  return `__import__('nbprofiler.render.origin', fromlist=['made_here']).made_here('${token}')`;
}

/**
 * Why a card's code was inserted without running, for the new cell and the notification: where its
 * report came from, as the card says, or that the kernel did not make it.
 */
export function notRunLine(request: ITryRequest): string {
  const why =
    request.origin ||
    (request.token
      ? 'this report was not made by this kernel (an earlier kernel, or another notebook, made it)'
      : 'this report was not made by this kernel');
  return `Inserted, not run: ${why}; read the code, then run the cell.`;
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** The first line of a tried cell: says which suggestion the cell tries. */
export function triedMarker(title: string): string {
  return `# nbprofiler: trying "${oneLine(title)}"`;
}

/** The source of the new cell: the marker line, the line saying why it was not run (`notRun`), then the card's code. */
export function triedSource(request: ITryRequest, notRun = ''): string {
  const why = notRun ? `# nbprofiler: ${oneLine(notRun)}\n` : '';
  return `${triedMarker(request.title)}\n${why}${request.code.replace(/\s+$/, '')}`;
}

/** The metadata of the new cell. */
export function triedMetadata(kind: string): { [key: string]: { tried: string } } {
  return { [TRIED_METADATA_KEY]: { tried: kind } };
}

/** The flags the profiled cell re-runs with: compare with its previous run, naming what was tried. */
export function tryFlags(kind: string): string[] {
  return ['--compare', '--tried', quoteFlag(kind)];
}
