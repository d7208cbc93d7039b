"""The report's CSS: the static HTML's rules (``STYLE``) and the explorer's additions (``WIDGET_STYLE``).

One place for every colour and size of the Python renderers, so that the
static HTML, the explorer and the comparison read the same.
"""
from __future__ import annotations

STYLE = """
.nbp{font-family:system-ui,-apple-system,Segoe UI,sans-serif;font-size:13px;line-height:1.45;max-width:1100px;
  color:#222}
.nbp h3{font-size:16px;margin:6px 0 4px}
.nbp h4{font-size:14px;margin:16px 0 4px;border-bottom:1px solid #ddd;padding-bottom:2px}
.nbp table{border-collapse:collapse;margin:4px 0}
.nbp td,.nbp th{padding:2px 8px;border-bottom:1px solid #eee;text-align:right;vertical-align:top}
.nbp th{background:#f6f6f6;font-weight:600}.nbp td{white-space:nowrap}
.nbp td.n,.nbp th.n{text-align:left;font-family:ui-monospace,Menlo,Consolas,monospace;max-width:420px;overflow:hidden;
  text-overflow:ellipsis;white-space:nowrap}
.nbp .how{color:#666;margin:2px 0 6px}.nbp .note{color:#8a5a00;margin:2px 0}
.nbp .warn{color:#b00020;margin:4px 0;font-weight:600}
.nbp .metrics{display:flex;flex-wrap:wrap;gap:8px;margin:6px 0}
.nbp .metric{border:1px solid #ddd;border-radius:6px;padding:4px 10px;min-width:110px}
.nbp .metric b{display:block;font-size:16px}.nbp .metric span{color:#666;font-size:11px}
.nbp .card{border:1px solid #ddd;border-left:4px solid #999;border-radius:4px;padding:6px 10px;margin:6px 0}
.nbp .card ul.evidence{margin:2px 0 4px;padding-left:20px}.nbp .card.high{border-left-color:#c0392b}
.nbp .card.medium{border-left-color:#e67e22}.nbp .card.low{border-left-color:#7f8c8d}
.nbp pre{background:#f6f8fa;padding:6px 8px;border-radius:4px;overflow-x:auto;margin:4px 0;font-size:12px}
.nbp .bar{display:inline-block;height:10px;vertical-align:middle}.nbp img{max-width:100%}
.nbp code{font-family:ui-monospace,Menlo,Consolas,monospace}.nbp td.src{white-space:pre}
.nbp .mtree summary{cursor:pointer;list-style:none}.nbp .mtree summary::-webkit-details-marker{display:none}
.nbp .mtree .tw{display:inline-block;width:14px;color:#666}.nbp .mtree summary .tw::before{content:"▸"}
.nbp .mtree details[open]>summary .tw::before{content:"▾"}.nbp .mtree .mt{color:#666}
.nbp .mrow{display:grid;width:100%}
.nbp .mrow.m3{grid-template-columns:minmax(200px,1fr) repeat(3,100px)}
.nbp .mrow.m5{grid-template-columns:minmax(200px,1fr) repeat(5,100px)}
.nbp .mrow>span{text-align:right;padding:1px 4px;border-bottom:1px solid #eee;white-space:nowrap;overflow:hidden;
  text-overflow:ellipsis}
.nbp .mrow>span:first-child{text-align:left;font-family:ui-monospace,Menlo,Consolas,monospace}
.nbp .mhead{font-weight:600}
.nbp .nbp-copy-code,.nbp .nbp-try{font:inherit;font-size:12px;padding:1px 8px;margin-right:6px;cursor:pointer;
  border:1px solid #999;border-radius:3px;background:#f3f3f3;color:inherit}
.nbp .nbp-try:disabled{cursor:progress;opacity:.7}.nbp .nbp-try-line{color:#666;font-size:12px;margin:2px 0}
.nbp .nbp-try{display:none}.nbp-lab .nbp .nbp-try{display:inline-block}.nbp-lab .nbp .nbp-try-line{display:none}
"""

WIDGET_STYLE = STYLE + """
.nbp-grid{display:grid;column-gap:0;font-size:12px}
.nbp-grid>div{padding:2px 6px;border-bottom:1px solid #eee;overflow:hidden;text-overflow:ellipsis;white-space:nowrap;
  text-align:right}
.nbp-grid>div.n{text-align:left;font-family:ui-monospace,Menlo,Consolas,monospace}
.nbp-grid>div.odd{background:#fafafa}
"""
