/**
 * The saved report's Export tab: downloads made in the browser from what the
 * output already holds, so they work offline and without a kernel — the
 * standalone HTML report (the output's text/html), the report data (its JSON),
 * and the timeline as a Chrome trace for Perfetto (timeline/perfetto.ts).
 */
import { decodeTimeline, ITimeline } from '../timeline/payload';
import { chromeTrace, traceFileName } from '../timeline/perfetto';
import { h } from './dom';
import { IReport } from './types';

export interface IExportSources {
  /** The output's standalone HTML report. */
  html?: string;
  /** The payload as saved. */
  data?: unknown;
}

export interface IDownload {
  label: string;
  fileName: string;
  /** Made on the click, so an unopened tab costs nothing. */
  blob: () => Blob;
}

/** A file name stem: the trace's name, else the run's time ("nbprofiler-report-2026-12-03-1740"). */
export function fileStem(report: IReport): string {
  const from = report.savedFrom;
  const trace = from?.kind === 'trace file' ? from.path?.split(/[\\/]/).pop() ?? '' : '';
  if (trace) {
    return trace.replace(/\.(pt\.)?trace\.json(\.gz)?$/, '').replace(/[^A-Za-z0-9._-]+/g, '_');
  }
  const when = from?.when?.replace(/^(\d{4}-\d{2}-\d{2})T(\d{2}):(\d{2}).*$/, '$1-$2$3') ?? '';
  return ['nbprofiler-report', when].filter(Boolean).join('-').replace(/[^A-Za-z0-9._-]+/g, '_');
}

/** The downloads this report offers. */
export function downloads(report: IReport, sources: IExportSources): IDownload[] {
  const stem = fileStem(report);
  const out: IDownload[] = [];
  const html = sources.html;
  if (html) {
    out.push({
      label: 'Standalone HTML report',
      fileName: `${stem}.html`,
      blob: () => new Blob([html], { type: 'text/html' })
    });
  }
  if (sources.data !== undefined) {
    const data = sources.data;
    out.push({
      label: 'Report data (JSON)',
      fileName: `${stem}.json`,
      blob: () => new Blob([JSON.stringify(data, null, 1)], { type: 'application/json' })
    });
  }
  if (report.timeline) {
    let timeline: ITimeline | null = null;
    try {
      timeline = decodeTimeline(report.timeline);
    } catch {
      // A timeline that cannot be read: the Timeline tab says why, and there is nothing to export.
    }
    if (timeline) {
      const t = timeline;
      out.push({
        label: 'Open in Perfetto (the timeline as a Chrome trace)',
        fileName: traceFileName(t),
        blob: () => new Blob([JSON.stringify(chromeTrace(t))], { type: 'application/json' })
      });
    }
  }
  return out;
}

/** Hand `blob` to the browser as a download named `fileName`, through a Blob link made for the click. */
export function saveBlob(blob: Blob, fileName: string): void {
  const url = URL.createObjectURL(blob);
  const link = h('a', { download: fileName, style: 'display:none' });
  link.href = url;
  document.body.appendChild(link);
  link.click();
  link.remove();
  // The browser has taken the file by the next turn; the URL is not needed after that.
  window.setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** A button that downloads `d`; the file is made on the click. */
export function downloadButton(d: IDownload): HTMLButtonElement {
  const button = h('button', { type: 'button', class: 'nbp-download', 'data-file': d.fileName, title: `Download ${d.fileName}` }, d.label);
  button.addEventListener('click', () => saveBlob(d.blob(), d.fileName));
  return button;
}

export function exportPanel(report: IReport, sources: IExportSources): HTMLElement {
  const out = h(
    'div',
    { class: 'nbp-export' },
    h(
      'p',
      { class: 'nbp-explain' },
      'Download this report from the notebook itself: no kernel and no network needed. The HTML report opens in any browser; the data is what this view is drawn from.'
    )
  );
  const list = downloads(report, sources);
  if (!list.length) {
    out.appendChild(h('p', { class: 'nbp-muted' }, 'This output holds nothing to download.'));
    return out;
  }
  out.appendChild(
    h('ul', { class: 'nbp-downloads' }, ...list.map(d => h('li', null, downloadButton(d), h('span', { class: 'nbp-muted' }, ` ${d.fileName}`))))
  );
  if (report.timeline) {
    out.appendChild(
      h(
        'p',
        { class: 'nbp-muted' },
        'To look at the trace in Perfetto, open https://ui.perfetto.dev and drag the file in: Perfetto reads it in the browser, and the file stays on this machine.'
      )
    );
  }
  return out;
}
