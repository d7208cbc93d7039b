/** Number formatting shared by the report view and its charts. */

/** A duration given in microseconds, in the unit that reads best. */
export function formatUs(us: number | null | undefined): string {
  if (us === null || us === undefined || !Number.isFinite(us)) {
    return '–';
  }
  const a = Math.abs(us);
  if (a >= 1e6) {
    return `${(us / 1e6).toFixed(a >= 1e7 ? 1 : 2)} s`;
  }
  if (a >= 1e3) {
    return `${(us / 1e3).toFixed(a >= 1e5 ? 0 : a >= 1e4 ? 1 : 2)} ms`;
  }
  if (a >= 10 || us === 0) {
    return `${us.toFixed(0)} µs`;
  }
  return `${us.toFixed(1)} µs`;
}

/** A duration given in milliseconds. */
export function formatMs(ms: number | null | undefined): string {
  return ms === null || ms === undefined ? '–' : formatUs(ms * 1e3);
}

/** Binary IEC units, each 1024 times the one before, as torch's own memory messages print them. */
const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

/**
 * Bytes in binary units: 512 B, 1.5 KiB, 38.0 MiB, 802 MiB, 31.7 GiB. Whole
 * bytes; in the larger units one decimal below 100 and none from 100 on. The
 * unit is the largest in which the rounded figure is at least 1 (1048575 B is
 * 1.0 MiB). The same rule as Python's `fmt_bytes` (nbprofiler/format.py),
 * which rounds ties as `toFixed` does, so the saved report shows the figures
 * the text, HTML and widget show; test/fixtures/bytes.json holds both to it.
 */
export function formatBytes(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) {
    return '–';
  }
  let v = bytes + 0; // -0 reads "0 B"
  let i = 0;
  let text = v.toFixed(0);
  while (Math.abs(Number(text)) >= 1024 && i < BYTE_UNITS.length - 1) {
    v /= 1024;
    i++;
    text = v.toFixed(1);
    if (Math.abs(Number(text)) >= 100) {
      text = v.toFixed(0);
    }
  }
  return `${text} ${BYTE_UNITS[i]}`;
}

/** A fraction in [0, 1] as a percentage. */
export function formatShare(share: number | null | undefined): string {
  if (share === null || share === undefined || !Number.isFinite(share)) {
    return '–';
  }
  const pct = share * 100;
  return `${pct >= 10 || pct === 0 ? pct.toFixed(0) : pct.toFixed(1)}%`;
}

export function formatCount(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) {
    return '–';
  }
  return Math.round(n).toLocaleString('en-US');
}

export function formatRate(perSecond: number | null | undefined): string {
  if (perSecond === null || perSecond === undefined || !Number.isFinite(perSecond)) {
    return '–';
  }
  if (perSecond >= 1e6) {
    return `${(perSecond / 1e6).toFixed(2)} M/s`;
  }
  if (perSecond >= 1e4) {
    return `${(perSecond / 1e3).toFixed(1)} k/s`;
  }
  return `${perSecond >= 100 ? perSecond.toFixed(0) : perSecond.toFixed(1)} /s`;
}

/**
 * "Nice" axis ticks from 0 to at least `max`: 1, 2 or 5 times a power of ten,
 * about `count` of them.
 */
export function niceTicks(max: number, count = 5): number[] {
  if (!(max > 0) || !Number.isFinite(max)) {
    return [0, 1];
  }
  const raw = max / count;
  const power = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 2.5, 5, 10].map(m => m * power).find(s => s >= raw) ?? 10 * power;
  const ticks: number[] = [];
  for (let t = 0; t < max + step * 0.999; t += step) {
    ticks.push(Number(t.toPrecision(12)));
  }
  if (ticks.length < 2) {
    ticks.push(step);
  }
  return ticks;
}

/** A unit to show a microsecond axis in, from its largest value. */
export function timeAxisUnit(maxUs: number): { label: string; scale: number } {
  if (maxUs >= 2e6) {
    return { label: 's', scale: 1e6 };
  }
  if (maxUs >= 2e3) {
    return { label: 'ms', scale: 1e3 };
  }
  return { label: 'µs', scale: 1 };
}

/**
 * A unit to show a byte axis in, from its largest value: the largest unit in
 * which that value is at least 2. The same rule as Python's `byte_axis_unit`.
 */
export function byteAxisUnit(maxBytes: number): { label: string; scale: number } {
  let i = 0;
  let scale = 1;
  while (maxBytes / scale >= 2048 && i < BYTE_UNITS.length - 1) {
    scale *= 1024;
    i++;
  }
  return { label: BYTE_UNITS[i], scale };
}

/** A large count in SI prefixes (1.28 TFLOP, 30.7 TFLOP/s), as Python's `format.fmt_si`. */
export function formatSi(value: number, unit: string): string {
  for (const [scale, prefix] of [[1e15, 'P'], [1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k']] as [number, string][]) {
    if (Math.abs(value) >= scale) {
      return `${Number((value / scale).toPrecision(3))} ${prefix}${unit}`;
    }
  }
  return `${Number(value.toPrecision(3))} ${unit}`;
}
