/** The report page's stylesheet (inline; its sha256 goes into the page's Content-Security-Policy). */
export const PAGE_STYLE = `
:root{--pass:#2e9d57;--fail:#d64545;--infra:#e39b1b;--skip:#8a8f98;--unf:#4a7fd6;--wait:#cfd4dc;--prov:#f0d36b;--fg:#1d232b;--mut:#5c6672;--bg:#fff;--line:#e3e7ec}
*{box-sizing:border-box}
body{margin:0;padding:16px 24px 48px;font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:var(--fg);background:var(--bg)}
h1{font-size:20px;margin:0 0 2px}h2{font-size:16px;margin:28px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}h3{font-size:14px;margin:14px 0 6px}
.meta,.note{color:var(--mut);font-size:12px}
.tiles{display:flex;flex-wrap:wrap;gap:8px;margin:10px 0}
.tile{border:1px solid var(--line);border-radius:6px;padding:6px 12px;min-width:92px}
.tile b{display:block;font-size:20px}.tile span{color:var(--mut);font-size:12px}
.tile.passed b{color:var(--pass)}.tile.failed b{color:var(--fail)}.tile.infra b{color:var(--infra)}.tile.skipped b{color:var(--skip)}.tile.unfinished b{color:var(--unf)}.tile.touched b,b.touched{color:var(--infra)}
.cols{display:flex;flex-wrap:wrap;gap:24px;align-items:flex-start}
table{border-collapse:collapse}
td,th{padding:3px 8px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
th{font-weight:600;color:var(--mut);font-size:12px}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
table.heat td.c{min-width:64px;text-align:center;cursor:pointer;border:2px solid #fff;font-variant-numeric:tabular-nums}
table.heat td.c:focus,table.heat td.c.on{outline:2px solid var(--fg)}
table.heat th.r{color:var(--fg)}
.h0{background:#f4c7c3}.h1{background:#f6d2c0}.h2{background:#f8dcbf}.h3{background:#fae6bf}.h4{background:#fbefc0}.h5{background:#f7f3c1}.h6{background:#e6f0c0}.h7{background:#d3eac0}.h8{background:#c0e3bf}.h9{background:#abdcbc}.h10{background:#93d3b4}
.hnone{background:#eef0f3;color:var(--mut)}.hinfra{background:#fbe3c0}
h4{font-size:13px;margin:10px 0 4px}
table.heat td.d,table.heat td.b{min-width:64px;text-align:center;border:2px solid #fff;font-variant-numeric:tabular-nums;white-space:nowrap}
.dm3{background:#e8958c}.dm2{background:#f1b8b1}.dm1{background:#f8dcd8}.d0{background:#eef0f3}.dp1{background:#d9efdc}.dp2{background:#b3dfbb}.dp3{background:#86cc96}
.tl{font-size:12px}
.tl details,#tbl{content-visibility:auto;contain-intrinsic-size:auto 600px}
.tl details{margin:2px 0}
.tl summary{cursor:pointer;display:flex;align-items:center;gap:6px;font-weight:600}
.tr,.tl summary{display:grid;grid-template-columns:260px 1fr;align-items:center;min-height:14px}
.lbl{overflow:hidden;text-overflow:ellipsis;white-space:nowrap;padding-right:8px}
.tr .lbl{padding-left:16px}
.tl svg{width:100%;height:12px;display:block}
svg.conc{height:70px;width:100%;display:block;border-bottom:1px solid var(--line)}
.axis{display:grid;grid-template-columns:260px 1fr;font-size:11px;color:var(--mut)}
.axis div{display:flex;justify-content:space-between}
rect.w{fill:var(--wait)}rect.p{fill:var(--prov)}rect.o-passed{fill:var(--pass)}rect.o-failed{fill:var(--fail)}rect.o-infra{fill:var(--infra)}rect.o-skipped{fill:var(--skip)}rect.o-unfinished{fill:var(--unf)}rect.g{fill:#9aa3ae}rect.gr{fill:#8e6bd1}
polyline.run{fill:none;stroke:var(--unf);stroke-width:1.5;vector-effect:non-scaling-stroke}
line.cap{stroke:var(--fail);stroke-dasharray:6 4;stroke-width:1;vector-effect:non-scaling-stroke}
.legend{display:flex;flex-wrap:wrap;gap:12px;font-size:12px;color:var(--mut);margin:6px 0}
.legend i{display:inline-block;width:12px;height:10px;margin-right:4px;vertical-align:middle}
.legend .w{background:var(--wait)}.legend .p{background:var(--prov)}.legend .passed{background:var(--pass)}.legend .failed{background:var(--fail)}.legend .infra{background:var(--infra)}.legend .skipped{background:var(--skip)}.legend .unfinished{background:var(--unf)}.legend .gr{background:#8e6bd1}.legend .cap{border-top:2px dashed var(--fail);height:0}.legend .run{border-top:2px solid var(--unf);height:0}
.bar{display:flex;gap:8px;align-items:center;margin:6px 0;flex-wrap:wrap}
input[type=search]{width:320px;padding:4px 8px;font:inherit}
#tbl th{cursor:pointer;user-select:none;white-space:nowrap}
#tbl th[aria-sort=ascending]::after{content:" \\25B2"}#tbl th[aria-sort=descending]::after{content:" \\25BC"}
#tbl td{font-size:12.5px}
.ph{font-weight:600}.o-passed .ph{color:var(--pass)}.o-failed .ph{color:var(--fail)}.o-infra .ph{color:var(--infra)}.o-skipped .ph{color:var(--skip)}.o-unfinished .ph{color:var(--unf)}
.lk a{margin-right:6px}
[hidden]{display:none!important}
#tip{position:fixed;pointer-events:none;background:#1d232b;color:#fff;font-size:12px;padding:6px 8px;border-radius:4px;white-space:pre;max-width:520px;overflow:hidden;z-index:10}
`;
