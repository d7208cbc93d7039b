/**
 * The Timeline view of a profiled run, drawn from the payload of
 * nbprofiler/render/timeline_data.py. Used by the timeline's MIME renderer
 * (the live explorer's Timeline tab) and by the saved report's Timeline tab.
 */
import { h } from '../report/dom';
import { TimelineView } from './view';

export { TIMELINE_MIME, ITimelinePayload } from './payload';
export { TimelineView } from './view';

const views = new WeakMap<HTMLElement, TimelineView>();

/**
 * The timeline as an element; a payload that cannot be read gives an element
 * saying why, in one line, instead of an exception.
 */
export function renderTimeline(payload: unknown): HTMLElement {
  try {
    const view = new TimelineView(payload);
    views.set(view.node, view);
    return view.node;
  } catch (err) {
    return h(
      'div',
      { class: 'nbp-timeline nbp-timeline-error' },
      `This timeline cannot be shown: ${err instanceof Error ? err.message : String(err)}.`
    );
  }
}

/** Remove the listeners of an element renderTimeline made (a no-op for its error element). */
export function disposeTimeline(node: HTMLElement): void {
  views.get(node)?.dispose();
  views.delete(node);
}

/** The view behind an element renderTimeline made, for tests and the browser checks. */
export function timelineViewOf(node: HTMLElement): TimelineView | undefined {
  return views.get(node);
}
