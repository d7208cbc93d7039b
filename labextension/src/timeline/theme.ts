/**
 * The canvas's colours, read from the CSS custom properties timeline.css
 * defines on the timeline (theme variables first: --jp-*, then --vscode-*,
 * then a literal), so the drawing follows the theme like the rest of the page.
 */

export interface ITheme {
  fg: string;
  muted: string;
  grid: string;
  bg: string;
  laneBg: string;
  highlight: string;
  select: string;
  flow: string;
  step: string;
  counter: string[];
  /** Fill per category name, with "other" for the rest. */
  category: Map<string, string>;
  font: string;
}

export const CATEGORY_NAMES = [
  'operator',
  'kernel',
  'memcpy',
  'memset',
  'nccl',
  'runtime',
  'dataloader',
  'annotation',
  'step',
  'other'
];

/** The theme as the element's styles give it now. */
export function readTheme(el: Element): ITheme {
  const style = getComputedStyle(el);
  const get = (name: string, fallback: string) => style.getPropertyValue(name).trim() || fallback;
  const category = new Map<string, string>();
  for (const name of CATEGORY_NAMES) {
    category.set(name, get(`--nbp-tl-cat-${name}`, '#9e9e9e'));
  }
  return {
    fg: get('--nbp-tl-fg', '#222'),
    muted: get('--nbp-tl-muted', '#555'),
    grid: get('--nbp-tl-grid', '#ddd'),
    bg: get('--nbp-tl-bg', '#fff'),
    laneBg: get('--nbp-tl-lane-bg', '#f4f4f4'),
    highlight: get('--nbp-tl-highlight', '#ffb300'),
    select: get('--nbp-tl-select', '#1976d2'),
    flow: get('--nbp-tl-flow', '#d32f2f'),
    step: get('--nbp-tl-step', '#6a1b9a'),
    counter: [get('--nbp-tl-counter1', '#1976d2'), get('--nbp-tl-counter2', '#388e3c')],
    category,
    font: `11px ${get('--nbp-tl-font', 'sans-serif')}`
  };
}

/** Black or white, whichever reads better on `fill` (a #rrggbb or rgb() colour as canvas reports it). */
export function textOn(fill: string): string {
  let r = 128;
  let g = 128;
  let b = 128;
  const hex = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})/i.exec(fill);
  const rgb = /^rgba?\(\s*(\d+)[,\s]+(\d+)[,\s]+(\d+)/i.exec(fill);
  if (hex) {
    [r, g, b] = [hex[1], hex[2], hex[3]].map(x => parseInt(x, 16));
  } else if (rgb) {
    [r, g, b] = [rgb[1], rgb[2], rgb[3]].map(Number);
  }
  const lin = (c: number) => {
    const s = c / 255;
    return s <= 0.03928 ? s / 12.92 : Math.pow((s + 0.055) / 1.055, 2.4);
  };
  const lum = 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
  // Contrast with black is (L+0.05)/0.05, with white 1.05/(L+0.05): pick the larger.
  return (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) ? '#000' : '#fff';
}
