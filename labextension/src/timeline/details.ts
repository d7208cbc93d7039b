/**
 * The details of a clicked event (or of a block of merged events), as DOM
 * built with textContent only: names, shapes and stack frames are untrusted.
 */
import { formatUs } from '../report/format';
import { h } from '../report/dom';
import { ISelection } from './draw';
import { ITimeline } from './payload';

/** What the panel says about a selection, as label/value rows (tests read these). */
export function detailRows(t: ITimeline, sel: ISelection): [string, string][] {
  const ev = t.events;
  const i = sel.first;
  const lane = t.lanes[sel.lane];
  if (sel.first !== sel.last) {
    return [
      ['Name', `${sel.events} events merged`],
      ['Why', 'each is under a pixel wide at this zoom; zoom in to tell them apart'],
      ['Span', formatUs(sel.t1 - sel.t0)],
      ['Start', formatUs(sel.t0)],
      ['Lane', lane.label]
    ];
  }
  const rows: [string, string][] = [
    ['Name', t.strings[ev.name[i]]],
    ['Duration', formatUs(ev.dur[i])],
    ['Category', t.categories[ev.cat[i]] ?? 'other'],
    ['Start', formatUs(ev.start[i])],
    ['Lane', lane.label]
  ];
  if (ev.count[i] > 1) {
    const busy = ev.busy ? `, busy ${formatUs(ev.busy[i])} of it` : '';
    rows.push(['Merged', `${ev.count[i]} events merged, each shorter than ${formatUs(t.aggregated?.below_us)}${busy}`]);
  }
  if (ev.shapes[i] >= 0) {
    rows.push(['Shapes', t.strings[ev.shapes[i]]]);
  }
  return rows;
}

/** The stack frames of an event, innermost last; empty without --stack. */
export function stackFrames(t: ITimeline, i: number): string[] {
  const s = t.events.stack[i];
  return s >= 0 ? (t.stacks[s] ?? []).map(k => t.strings[k] ?? '') : [];
}

/**
 * The panel's content. `partner` is the other end of the event's flow (the
 * kernel it launched, or the launch that ran it); `goTo` shows that event.
 */
export function detailsNode(
  t: ITimeline,
  sel: ISelection,
  partner: number,
  goTo: (event: number) => void
): HTMLElement {
  const list = h('dl', { class: 'nbp-tl-details-list' });
  for (const [label, value] of detailRows(t, sel)) {
    list.appendChild(h('dt', null, label));
    list.appendChild(h('dd', { 'data-field': label.toLowerCase() }, value));
  }
  const node = h('div', null, list);
  if (sel.first === sel.last) {
    if (partner >= 0) {
      const isLaunch = t.flowSrc.includes(sel.first);
      const button = h(
        'button',
        { type: 'button', class: 'nbp-tl-button' },
        `${isLaunch ? 'Go to the kernel it launched' : 'Go to its launch'}: ${t.strings[t.events.name[partner]]}`
      );
      button.addEventListener('click', () => goTo(partner));
      node.appendChild(h('p', null, button));
    }
    const frames = stackFrames(t, sel.first);
    if (frames.length) {
      node.appendChild(h('div', { class: 'nbp-tl-details-h' }, 'Stack (innermost last)'));
      node.appendChild(stackList(t, sel.first, frames));
    }
  }
  return node;
}

/**
 * A stack as a list that opens at the user's own code: the framework frames before the first
 * user frame (the kernel, IPython, nbprofiler's magic: often 30 of them) are folded behind a
 * button that shows them, and the user's frames are marked.
 */
function stackList(t: ITimeline, i: number, frames: string[]): HTMLElement {
  const codes = t.stacks[t.events.stack[i]] ?? [];
  const user = codes.map(k => t.userFrames.has(k));
  const first = user.indexOf(true);
  const list = h('ol', { class: 'nbp-tl-stack' });
  frames.forEach((frame, k) => {
    const item = h('li', { class: user[k] ? 'nbp-tl-user' : null }, frame);
    item.hidden = k < first;
    list.appendChild(item);
  });
  if (first <= 0) {
    return list;
  }
  const toggle = h('button', { type: 'button', class: 'nbp-tl-button nbp-tl-frames' }, `show ${first} framework frames`);
  toggle.addEventListener('click', () => {
    const show = toggle.dataset.shown !== 'true';
    toggle.dataset.shown = String(show);
    toggle.textContent = `${show ? 'hide' : 'show'} ${first} framework frames`;
    Array.from(list.children).forEach((li, k) => {
      (li as HTMLElement).hidden = !show && k < first;
    });
  });
  return h('div', null, toggle, list);
}
