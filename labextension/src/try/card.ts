/**
 * What a "Try it" button asks for, read from the suggestion card it sits in,
 * and what trying it writes: the marked cell and the flags of the re-run.
 *
 * The cards come from three places (nbprofiler's static HTML and its ipywidgets
 * explorer, `.nbp .card`, and this extension's saved-report view, `.nbp-card`)
 * and share one markup for the button: `button.nbp-try[data-nbp-kind]`, next to
 * the card's `<pre>` of code. Plain DOM, no JupyterLab imports: unit-tested in jsdom.
 */
import { quoteFlag } from '../options';

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
  return { kind, title: oneLine(title?.textContent ?? '') || kind, code };
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** The first line of a tried cell: says which suggestion the cell tries. */
export function triedMarker(title: string): string {
  return `# nbprofiler: trying "${oneLine(title)}"`;
}

/** The source of the new cell: the marker line, then the card's code. */
export function triedSource(request: ITryRequest): string {
  return `${triedMarker(request.title)}\n${request.code.replace(/\s+$/, '')}`;
}

/** The metadata of the new cell. */
export function triedMetadata(kind: string): { [key: string]: { tried: string } } {
  return { [TRIED_METADATA_KEY]: { tried: kind } };
}

/** The flags the profiled cell re-runs with: compare with its previous run, naming what was tried. */
export function tryFlags(kind: string): string[] {
  return ['--compare', '--tried', quoteFlag(kind)];
}
