"""The report's CSS: the static HTML's rules (``STYLE``) and the explorer's additions (``WIDGET_STYLE``).

One place for every colour and size of the Python renderers, so that the
static HTML, the explorer and the comparison read the same.

Colours: each is a ``--nbp-*`` property of ``.nbp``, taken from JupyterLab's
theme (``--jp-*``), then VS Code's (``--vscode-*``), then a literal, so the
report follows the light, dark and high-contrast themes where it is shown and
still reads in nbconvert's static HTML, which defines neither. Text is always
drawn in a theme's foreground colours on its own backgrounds (those pairs are
made to be read); the severity colours (error, warning) mark borders only, as
their contrast against every theme's background is not guaranteed.
"""
from __future__ import annotations

MONOSPACE = "var(--jp-code-font-family,var(--vscode-editor-font-family,ui-monospace,Menlo,Consolas,monospace))"

THEME = """
.nbp{--nbp-fg:var(--jp-content-font-color1,var(--vscode-editor-foreground,#222));
  --nbp-muted:var(--jp-content-font-color2,var(--vscode-descriptionForeground,#555));
  --nbp-border:var(--jp-border-color1,var(--vscode-panel-border,#bbb));
  --nbp-rule:var(--jp-border-color2,var(--vscode-panel-border,#e0e0e0));
  --nbp-head-bg:var(--jp-layout-color2,var(--vscode-editorWidget-background,#f0f0f0));
  --nbp-stripe:var(--jp-rendermime-table-row-background,var(--vscode-list-hoverBackground,#f7f7f7));
  --nbp-code-bg:var(--jp-cell-editor-background,var(--vscode-textCodeBlock-background,#f4f6f8));
  --nbp-button-bg:var(--jp-layout-color2,var(--vscode-button-secondaryBackground,#eee));
  --nbp-button-fg:var(--jp-ui-font-color1,var(--vscode-button-secondaryForeground,#222));
  --nbp-error:var(--jp-error-color1,var(--vscode-errorForeground,#c0392b));
  --nbp-warn:var(--jp-warn-color1,var(--vscode-editorWarning-foreground,#e67e22));
  --nbp-ok:var(--jp-success-color1,var(--vscode-testing-iconPassed,#1e7b34));
  --nbp-low:var(--jp-border-color1,var(--vscode-descriptionForeground,#7f8c8d));
  --nbp-accent:var(--jp-brand-color1,var(--vscode-focusBorder,#1976d2));
  color:var(--nbp-fg)}
"""

STYLE = THEME + """
.nbp{font-family:system-ui,-apple-system,Segoe UI,sans-serif;font-size:13px;line-height:1.45;max-width:1100px}
.nbp h3{font-size:16px;margin:6px 0 4px;color:var(--nbp-fg)}
.nbp h4{font-size:14px;margin:16px 0 4px;border-bottom:1px solid var(--nbp-rule);padding-bottom:2px;color:var(--nbp-fg)}
.nbp table{border-collapse:collapse;margin:4px 0;color:var(--nbp-fg)}
.nbp td,.nbp th{padding:2px 8px;border-bottom:1px solid var(--nbp-rule);text-align:right;vertical-align:top;
  color:var(--nbp-fg);background:transparent}
.nbp th{background:var(--nbp-head-bg);font-weight:600}.nbp td{white-space:nowrap}
.nbp tbody tr:nth-child(even) td{background:var(--nbp-stripe)}
.nbp td.n,.nbp th.n{text-align:left;font-family:""" + MONOSPACE + """;max-width:420px;overflow:hidden;
  text-overflow:ellipsis}
.nbp .nbp-scroll{overflow-x:auto;max-width:100%}
.nbp .how{color:var(--nbp-muted);margin:2px 0 6px}
.nbp .note{color:var(--nbp-fg);margin:2px 0;border-left:3px solid var(--nbp-warn);padding-left:6px}
.nbp .warn{color:var(--nbp-fg);margin:4px 0;font-weight:600;border-left:3px solid var(--nbp-error);padding-left:6px}
.nbp .metrics{display:flex;flex-wrap:wrap;gap:8px;margin:6px 0}
.nbp .metric{border:1px solid var(--nbp-border);border-radius:6px;padding:4px 10px;min-width:110px;color:var(--nbp-fg)}
.nbp .metric b{display:block;font-size:16px;color:var(--nbp-fg)}
.nbp .metric span{color:var(--nbp-muted);font-size:11px}
.nbp .card{border:1px solid var(--nbp-border);border-left:4px solid var(--nbp-low);border-radius:4px;padding:6px 10px;
  margin:6px 0;color:var(--nbp-fg)}
.nbp .card ul.evidence{margin:2px 0 4px;padding-left:20px}.nbp .card.high{border-left-color:var(--nbp-error)}
.nbp .card.medium{border-left-color:var(--nbp-warn)}.nbp .card.low{border-left-color:var(--nbp-low)}
.nbp pre{background:var(--nbp-code-bg);color:var(--nbp-fg);padding:6px 8px;border-radius:4px;overflow-x:auto;
  margin:4px 0;font-size:12px}
.nbp pre,.nbp code,.nbp pre code{font-family:""" + MONOSPACE + """}
.nbp .card pre,.nbp .card pre code{white-space:pre-wrap;overflow-wrap:anywhere}
.nbp .bar{display:inline-block;height:10px;vertical-align:middle}.nbp img{max-width:100%}
.nbp .bar.track{background:var(--nbp-rule)}.nbp .bar.heat{background:var(--nbp-error)}
.nbp td.src{white-space:pre}
.nbp .mtree summary{cursor:pointer;list-style:none}.nbp .mtree summary::-webkit-details-marker{display:none}
.nbp .mtree .tw{display:inline-block;width:14px;color:var(--nbp-muted)}.nbp .mtree summary .tw::before{content:"▸"}
.nbp .mtree details[open]>summary .tw::before{content:"▾"}.nbp .mtree .mt{color:var(--nbp-muted)}
.nbp .mrow{display:grid;width:100%}
.nbp .mrow.m3{grid-template-columns:minmax(200px,1fr) repeat(3,100px)}
.nbp .mrow.m5{grid-template-columns:minmax(200px,1fr) repeat(5,100px)}
.nbp .mrow>span{text-align:right;padding:1px 4px;border-bottom:1px solid var(--nbp-rule);white-space:nowrap;
  overflow:hidden;text-overflow:ellipsis}
.nbp .mrow>span:first-child{text-align:left;font-family:""" + MONOSPACE + """}
.nbp .mhead{font-weight:600}
.nbp .nbp-copy-code,.nbp .nbp-try{font:inherit;font-size:12px;padding:1px 8px;margin-right:6px;cursor:pointer;
  border:1px solid var(--nbp-border);border-radius:3px;background:var(--nbp-button-bg);color:var(--nbp-button-fg)}
.nbp .nbp-try:disabled{cursor:progress;opacity:.7}
.nbp .nbp-try-line,.nbp .nbp-guidance{color:var(--nbp-muted);font-size:12px;margin:2px 0}
.nbp .nbp-try{display:none}.nbp-lab .nbp .nbp-try{display:inline-block}.nbp-lab .nbp .nbp-try-line{display:none}
"""

WIDGET_STYLE = STYLE + """
.nbp-grid{display:grid;column-gap:0;font-size:12px;max-width:none;width:max-content;min-width:100%}
.nbp-grid>div.r{display:contents}
.nbp-grid>div>div{padding:2px 6px;border-bottom:1px solid var(--nbp-rule);overflow:hidden;text-overflow:ellipsis;
  white-space:nowrap;text-align:right;color:var(--nbp-fg)}
.nbp-grid>div>div.n{text-align:left;font-family:""" + MONOSPACE + """}
.nbp-grid>div>div.odd{background:var(--nbp-stripe)}
.nbp-grid>div>div.h{background:var(--nbp-head-bg);font-weight:600;cursor:pointer;font-family:inherit;white-space:normal;
  border-bottom:1px solid var(--nbp-border)}
.nbp-grid>div>div.h.sorted{box-shadow:inset 0 -2px 0 var(--nbp-accent)}
.nbp-grid.pick>div>div.c{cursor:pointer}
.nbp-grid>div>div.picked{box-shadow:inset 0 1px 0 var(--nbp-accent),inset 0 -1px 0 var(--nbp-accent)}
"""
