"""CSS and small JS snippets for the app (passed to launch(), where Gradio 6 takes them)."""
from specdec.ui.room_style import ROOM_CSS
from specdec.ui.views.fates import fate_css

# The fates' Okabe-Ito colours and shape cues come from views/fates.py (the same in the legend and every plot).
CSS = fate_css() + """
.tok-out { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 14px;
  line-height: 1.9; white-space: pre-wrap; word-break: break-word; padding: 10px 12px;
  border: 1px solid var(--border-color-primary); border-radius: 8px; min-height: 120px;
  background: var(--background-fill-secondary); }
.tok { border-radius: 3px; padding: 0 1px; cursor: pointer; }
.tok:hover { outline: 2px solid var(--color-accent); }
.tok-prompt { color: var(--body-text-color-subdued); }
.draft-tree { margin: .1em 0 .1em .6em; padding-left: .9em; border-left: 1px dotted #999; list-style: none; }
.tok-empty, .nl { color: var(--body-text-color-subdued); font-size: 11px; }
.step-mark { display: inline-block; font-size: 9px; line-height: 1; vertical-align: super;
  color: var(--body-text-color-subdued); border-left: 1px solid var(--body-text-color-subdued);
  padding: 0 2px 0 1px; margin-left: 2px; user-select: none; }
.tok-step-current { background: rgba(240,228,66,.35); border-radius: 4px; box-shadow: 0 0 0 2px #F0E442; }
.tok-cursor { animation: blink 1s step-end infinite; color: var(--color-accent); }
@keyframes blink { 50% { opacity: 0; } }
.tok-note { color: var(--body-text-color-subdued); font-style: italic; }
.tok-legend { display: flex; flex-wrap: wrap; gap: 6px 16px; font-size: 13px; margin: 4px 0 8px; }
.tok-legend small { color: var(--body-text-color-subdued); }
.legend-item .tok { cursor: default; }
.error-box { border: 2px solid #D55E00; background: rgba(213,94,0,.10); border-radius: 8px;
  padding: 8px 12px; margin: 4px 0; }
.status-line { color: var(--body-text-color-subdued); font-size: 13px; padding: 2px 4px; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(150px, 1fr)); gap: 8px; }
.card { border: 1px solid var(--border-color-primary); border-radius: 8px; padding: 8px 10px;
  background: var(--background-fill-primary); }
.card .label { font-size: 12px; color: var(--body-text-color-subdued); }
.card .value { font-size: 22px; font-weight: 600; }
.card .sub { font-size: 11px; color: var(--body-text-color-subdued); }
.race-head { display: flex; justify-content: space-between; align-items: baseline; margin-bottom: 4px; }
.race-rate { font-size: 22px; font-weight: 600; }
.race-bar { height: 6px; background: var(--border-color-primary); border-radius: 3px; overflow: hidden; }
.race-bar > div { height: 100%; background: var(--color-accent); }
.card-key { border: 2px solid var(--color-accent); }
.card .verdict { font-size: 13px; font-weight: 600; margin: -2px 0 2px; }
.key-result { font-size: 18px; font-weight: 600; line-height: 1.4; padding: 10px 14px; margin: 6px 0;
  border: 2px solid var(--color-accent); border-radius: 8px; background: var(--background-fill-secondary); }
.explain-note { font-size: 13px; color: var(--body-text-color-subdued); }
#steps-table th, #sweep-table th, #steps-table th *, #sweep-table th * { white-space: nowrap;
  word-break: keep-all; overflow-wrap: normal; }
#steps-table th .header, #sweep-table th .header, #sweep-table td { font-size: 12px; }
.verdict-big { font-size: 24px; font-weight: 700; line-height: 1.35; padding: 10px 14px; margin: 6px 0;
  border-left: 6px solid #009E73; background: var(--background-fill-secondary); border-radius: 6px; }
.verdict-big[data-verdict="slower"] { border-left-color: #D55E00; }
.verdict-big[data-verdict="no measurable difference"], .verdict-big[data-verdict="none"] { border-left-color: #777; }
#gen-status .status-line + .verdict-big, #gen-status .status-line + .run-progress { margin-top: 2px; }
.run-progress { font-size: 16px; line-height: 1.4; padding: 8px 12px; margin: 6px 0; border-radius: 6px;
  border: 2px dashed var(--color-accent); background: var(--background-fill-secondary); }
.run-progress .busy { font-size: 13px; color: var(--body-text-color-subdued); margin-top: 2px; }
.spinner { display: inline-block; width: 12px; height: 12px; margin-right: 8px; border-radius: 50%;
  border: 2px solid var(--color-accent); border-right-color: transparent; animation: spin 1s linear infinite; }
@keyframes spin { to { transform: rotate(360deg); } }
.cards-primary { grid-template-columns: repeat(4, minmax(0, 1fr)); align-items: stretch; }
.cards-primary .card { height: 100%; box-sizing: border-box; }
@media (max-width: 700px) { .cards-primary { grid-template-columns: repeat(2, minmax(0, 1fr)); } }
.card-details { margin-top: 8px; font-size: 13px; }
.card-details summary { cursor: pointer; color: var(--body-text-color-subdued); }
.sketch { font-size: 14px; line-height: 1.8; padding: 8px 14px; border: 1px dashed var(--border-color-primary);
  border-radius: 8px; }
.sketch-title { font-weight: 600; }
.sketch ol { margin: 4px 0 0 1.2em; }
#steps-table td, #steps-table td * { word-break: keep-all !important; overflow-wrap: normal !important;
  hyphens: none; }
html, body { overflow-x: hidden; }
body:not(.has-run) .after-run, body.has-run .before-run { display: none !important; }
#gen-error:not(:has(.error-box)), #gen-status:not(:has(.status-line, .verdict-big, .run-progress)) { display: none; }
.theory-fit { font-size: 14px; line-height: 1.5; }
.fit-table { border-collapse: collapse; margin: 4px 0 10px; }
.fit-table td, .fit-table th { border: 1px solid var(--border-color-primary); padding: 2px 8px; text-align: right; }
.explain { font-size: 14px; line-height: 1.5; }
.explain code { font-size: 13px; }
.tour-progress .segs { display: flex; gap: 4px; margin: 2px 0 6px; }
.tour-progress .seg { flex: 1; height: 10px; border-radius: 5px; background: var(--border-color-primary); }
.tour-progress .seg-done { background: #009E73; }
.tour-progress .seg-current { box-shadow: 0 0 0 2px var(--color-accent); }
.tour-progress .where { font-size: 14px; }
.tour-compare { display: grid; grid-template-columns: 1fr 1fr; gap: 8px; }
.tour-compare .side { border: 1px solid var(--border-color-primary); border-radius: 8px; padding: 6px 10px;
  background: var(--background-fill-primary); min-width: 0; overflow-wrap: anywhere; }
.tour-compare .side[data-side="prediction"] { border-left: 4px solid #0072B2; }
.tour-compare .side[data-side="measured"] { border-left: 4px solid #009E73; }
.tour-compare .label { font-size: 12px; color: var(--body-text-color-subdued); }
.tour-compare .value { font-size: 15px; }
.tour-compare .sub { font-size: 11px; color: var(--body-text-color-subdued); }
@media (max-width: 700px) { .tour-compare { grid-template-columns: 1fr; } }
#link-note:not(:has(p, li)), #share-note:not(:has(p)) { display: none; }
#link-note:has(li) { border: 2px solid #D55E00; background: rgba(213,94,0,.10); border-radius: 8px; padding: 4px 12px; }
body.projector .tour-progress .where, body.projector .tour-compare .value { font-size: 20px !important; }
body.projector .tour-compare .label { font-size: 16px !important; }
body.projector #tour button { font-size: 18px !important; }
""" + ROOM_CSS

# Clicking a token selects it for the inspector: trigger gr.HTML's `select` with [step, position].
TOKEN_CLICK_JS = """
element.addEventListener('click', (e) => {
  const tok = e.target.closest('.tok[data-step]');
  if (!tok) return;
  trigger('select', {index: [parseInt(tok.dataset.step), tok.dataset.pos], value: tok.textContent});
});
"""

# On load: the first Run swaps the first screen's sketch for the run's views (body.has-run); ?projector=1 turns
# projector mode on (larger type, fine print hidden); on a narrow screen (a phone) the sidebar starts closed, so it
# does not cover the prompt.
LOAD_JS = """
() => {
  document.addEventListener('click', (e) => {
    if (e.target.closest('#run-btn')) { document.body.classList.add('has-run'); }
  }, true);
  const projector = new URLSearchParams(window.location.search).get('projector');
  if (projector === '1' || projector === 'true') { document.body.classList.add('projector'); }
  if (window.innerWidth <= 768) {
    const close = () => {
      const sidebar = document.querySelector('.sidebar.open');
      const toggle = sidebar && sidebar.querySelector('.toggle-button');
      if (toggle) { toggle.click(); return true; }
      return !!document.querySelector('.sidebar');
    };
    if (!close()) { const timer = setInterval(() => { if (close()) clearInterval(timer); }, 100); }
  }
}
"""

# The projector toggle: the class on <body> follows the checkbox (no server round trip), and the plots already drawn
# are drawn again, so plotly lays them out for the text's new size (room_style.py).
PROJECTOR_JS = """(on) => { document.body.classList.toggle('projector', !!on);
  if (window.Plotly) setTimeout(() => document.querySelectorAll('.js-plotly-plot').forEach(
    (plot) => window.Plotly.newPlot(plot, plot.data, plot.layout, plot._context)), 50);
  return on; }"""
# On load, the toggle shows the mode ?projector=1 asked for (its change then applies it).
PROJECTOR_FROM_URL_JS = "() => ['1', 'true'].includes(new URLSearchParams(window.location.search).get('projector'))"
