"""The HTML report's inline stylesheet and script (no network, no CDN), and the page's
Content-Security-Policy: only this script may run, nothing may be fetched.

The script only filters: it reads ``data-*`` attributes the renderer wrote (escaped) and sets
``hidden`` and ``textContent``; it never parses trace text as HTML.
"""

from __future__ import annotations

import base64
import hashlib

STYLE = """
:root{--fail:#c62828;--pass:#2e7d32;--mark:#fff3cd;--line:#ddd;--muted:#666;
--agent:#5c6bc0;--model:#8e24aa;--tool:#00897b;--other:#90a4ae}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#222;
background:#fafafa}
header,main{max-width:1200px;margin:0 auto;padding:12px 20px}
h1{font-size:22px;margin:8px 0}h2{font-size:17px;margin:18px 0 8px}
h3{font-size:15px;margin:0 0 6px;display:flex;gap:8px;align-items:baseline;flex-wrap:wrap}
h4{font-size:13px;margin:10px 0 4px;color:var(--muted)}
.pass{color:var(--pass)}.fail{color:var(--fail)}
.badge{font-size:11px;padding:1px 6px;border-radius:8px;border:1px solid currentColor}
.muted,small{color:var(--muted)}
table{border-collapse:collapse;background:#fff;margin:4px 0 10px}
th,td{padding:3px 10px;border-bottom:1px solid var(--line);text-align:left;
vertical-align:top}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.rate{display:inline-block;width:80px;height:8px;background:#eee;vertical-align:middle}
.rate i{display:block;height:100%;background:var(--pass)}
.grid{display:flex;gap:28px;flex-wrap:wrap}
.gate{padding:8px 12px;border-radius:6px;background:#fff;border:1px solid var(--line)}
.filters{position:sticky;top:0;background:#fafafa;padding:8px 0;border-bottom:1px solid
var(--line);z-index:2;display:flex;gap:14px;flex-wrap:wrap;align-items:center}
section.row{background:#fff;border:1px solid var(--line);border-left:4px solid var(--pass);
border-radius:4px;padding:10px 12px;margin:10px 0}
section.row.failed{border-left-color:var(--fail)}
ul.failures{margin:4px 0 8px;padding-left:20px}
ul.failures li{white-space:pre-wrap;word-break:break-word}
.axis{position:relative;height:16px;margin-left:34%;margin-right:80px;font-size:11px;
color:var(--muted);border-bottom:1px solid var(--line)}
.axis span{position:absolute;transform:translateX(-50%)}
.axis span:first-child{transform:none}
.sp{display:flex;align-items:center;min-height:22px;border-bottom:1px dotted #eee}
.sp .name{width:34%;overflow:hidden;text-overflow:ellipsis;white-space:nowrap;font-size:13px}
.sp .lane{position:relative;flex:1;height:14px}
.sp .lane i{position:absolute;top:2px;height:10px;min-width:2px;border-radius:2px;
background:var(--other)}
.sp.k-agent .lane i{background:var(--agent)}.sp.k-model .lane i{background:var(--model)}
.sp.k-tool .lane i{background:var(--tool)}
.sp.st-error .lane i{outline:2px solid var(--fail)}
.sp .dur{width:80px;text-align:right;font-size:12px;color:var(--muted)}
.kind{font-size:10px;text-transform:uppercase;color:var(--muted);margin-right:4px}
.call{margin:2px 0 6px 0;padding:4px 8px;border-radius:4px;background:#f5f7f7;font-size:12px}
.call code,.reply pre{white-space:pre-wrap;word-break:break-all;font:12px ui-monospace,
SFMono-Regular,Menlo,monospace}
.offending{background:var(--mark);border:1px solid #e0b000}
.sp.offending{border:1px solid #e0b000}
.why{color:var(--fail);margin-top:3px;white-space:pre-wrap;word-break:break-word}
.reply{margin-top:8px}.reply pre{background:#f5f5f5;padding:6px 8px;margin:2px 0}
.legend i{display:inline-block;width:10px;height:10px;margin:0 3px 0 10px;border-radius:2px}
"""

SCRIPT = """
(function () {
  var rows = document.querySelectorAll('section.row');
  var pickers = document.querySelectorAll('select[data-filter]');
  var shown = document.getElementById('shown');
  function matches(row, key, value) {
    if (!value) { return true; }
    var held = row.getAttribute('data-' + key) || '';
    return ('|' + held + '|').indexOf('|' + value + '|') >= 0;
  }
  function apply() {
    var count = 0;
    for (var i = 0; i < rows.length; i++) {
      var ok = true;
      for (var j = 0; j < pickers.length; j++) {
        var picker = pickers[j];
        ok = ok && matches(rows[i], picker.getAttribute('data-filter'), picker.value);
      }
      rows[i].hidden = !ok;
      if (ok) { count++; }
    }
    if (shown) { shown.textContent = String(count); }
  }
  for (var k = 0; k < pickers.length; k++) { pickers[k].addEventListener('change', apply); }
  apply();
})();
"""


def _script_hash(script: str) -> str:
    digest = hashlib.sha256(script.encode("utf-8")).digest()
    return "sha256-" + base64.b64encode(digest).decode("ascii")


#: Only the report's own script runs; nothing is loaded from anywhere (no network at all).
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
    f"script-src '{_script_hash(SCRIPT)}'; base-uri 'none'; form-action 'none'"
)
