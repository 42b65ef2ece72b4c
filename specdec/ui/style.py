"""CSS and small JS snippets for the app (passed to launch(), where Gradio 6 takes them)."""

# Okabe-Ito colours (colour-blind safe), each paired with a distinct shape cue.
CSS = """
.tok-out { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 14px;
  line-height: 1.9; white-space: pre-wrap; word-break: break-word; padding: 10px 12px;
  border: 1px solid var(--border-color-primary); border-radius: 8px; min-height: 120px;
  background: var(--background-fill-secondary); }
.tok { border-radius: 3px; padding: 0 1px; cursor: pointer; }
.tok:hover { outline: 2px solid var(--color-accent); }
.tok-prompt { color: var(--body-text-color-subdued); }
.tok-accepted { background: rgba(0,158,115,.18); text-decoration: underline solid #009E73 2px;
  text-underline-offset: 3px; }
.tok-rejected { background: rgba(213,94,0,.16); text-decoration: line-through #D55E00 2px;
  border: 1px dashed #D55E00; color: #A34400; }
.tok-unchecked { background: transparent; opacity: .55; text-decoration: line-through #D55E00 1px;
  border: 1px dotted #D55E00; }
.draft-tree { margin: .1em 0 .1em .6em; padding-left: .9em; border-left: 1px dotted #999; list-style: none; }
.tok-resampled { background: rgba(230,159,0,.25); text-decoration: underline double #B07800 3px;
  text-underline-offset: 3px; }
.tok-bonus { background: rgba(0,114,178,.18); outline: 1px dotted #0072B2;
  text-decoration: overline #0072B2 2px; }
.tok-target { background: rgba(120,120,120,.14); }
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
.theory-fit { font-size: 14px; line-height: 1.5; }
.fit-table { border-collapse: collapse; margin: 4px 0 10px; }
.fit-table td, .fit-table th { border: 1px solid var(--border-color-primary); padding: 2px 8px; text-align: right; }
.explain { font-size: 14px; line-height: 1.5; }
.explain code { font-size: 13px; }
"""

# Clicking a token selects it for the inspector: trigger gr.HTML's `select` with [step, position].
TOKEN_CLICK_JS = """
element.addEventListener('click', (e) => {
  const tok = e.target.closest('.tok[data-step]');
  if (!tok) return;
  trigger('select', {index: [parseInt(tok.dataset.step), tok.dataset.pos], value: tok.textContent});
});
"""
