import { LabIcon } from '@jupyterlab/ui-components';

/** A stopwatch with a bar chart: "time this cell". Theme colours via jp-icon3. */
const svgstr = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">
  <g class="jp-icon3" fill="#616161">
    <path d="M9 1h6v2H9z"/>
    <path d="M19.03 7.39l1.42-1.42-1.41-1.41-1.42 1.42A8.96 8.96 0 0 0 12 4a9 9 0 1 0 9 9c0-2.12-.74-4.07-1.97-5.61zM12 20a7 7 0 1 1 0-14 7 7 0 0 1 0 14z"/>
    <path d="M8 14h2v3H8zM11 11h2v6h-2zM14 9h2v8h-2z"/>
  </g>
</svg>`;

export const profileIcon = new LabIcon({ name: 'nbprofiler:profile', svgstr });
