"""The page's CSS for the three rooms it is used in (style.py adds it to the app's CSS):

- a laptop (1280×800): a one-line header, the examples in one row, every tab in one row, so that after Run the
  verdict sentence and the first coloured tokens are on the first screen;
- a projector (body.projector, from ?projector=1 or the sidebar's toggle): what the back row reads grows — tokens,
  the verdict, the cards, the legend and every plot's text — and fine print hides; the sidebar (the teacher's) keeps
  its size, so no dropdown truncates (its rules are !important: Gradio's scoped rules outrank a body class);
- a phone (≤ 768 px): the compact row (Draft, K, Temperature, "All settings") beside the prompt, the tabs wrapped,
  no Plotly toolbar over a plot's title.

Plot text grows in projector mode through CSS on every SVG <text>, plotly's measuring node included, so plotly lays
its margins and legends out for the larger type when it draws (PROJECTOR_JS redraws the plots on a toggle)."""

ROOM_CSS = """
#app-head { display: flex; flex-wrap: wrap; align-items: baseline; gap: 0 14px; }
#app-head h1 { font-size: 22px; margin: 0; white-space: nowrap; }
#app-head .tagline { font-size: 13px; line-height: 1.45; margin: 0; color: var(--body-text-color-subdued); flex: 1 1 0;
  min-width: 320px; }
#compact-controls { display: none; }
#examples .gallery { flex-wrap: nowrap; overflow-x: auto; padding-bottom: 2px; }
#examples .gallery-item { flex: 0 0 auto; }
#examples .gallery-item .gallery { white-space: nowrap !important; }
#clean-box { gap: 2px; }
#cleanup-note:not(:has(p)) { display: none; }
#tabs [role=tablist] { flex-wrap: wrap; row-gap: 0; }
#tabs [role=tab] { padding: 6px 6px; font-size: 13.5px; }
#live .tok-legend small { display: none; }
#live .tok-legend { margin: 0 0 4px; }
#report-file:has(.empty) { display: none; }
#gen-status .status-line { font-size: 12px; }
.js-plotly-plot .modebar-container { top: auto !important; bottom: 0; }

body.projector { font-size: 20px !important; }
body.projector .tok-out { font-size: 28px !important; line-height: 1.7 !important; }
body.projector .verdict-big { font-size: 40px !important; }
body.projector .card .value { font-size: 36px !important; }
body.projector .card .label, body.projector .tok-legend, body.projector .card .verdict { font-size: 18px !important; }
body.projector .fine-print, body.projector .explain-note, body.projector .card .sub, body.projector #app-head .tagline,
body.projector .run-progress .busy, body.projector .status-line, body.projector .tok-legend small { display: none !important; }
body.projector .gradio-container main { --text-md: 20px !important; --text-sm: 18px !important; --text-lg: 24px !important; }
body.projector main textarea, body.projector main button, body.projector main .prose { font-size: 20px !important; }
body.projector #tabs [role=tab] { font-size: 20px !important; padding: 6px 12px !important; }
body.projector svg text { font-size: 18px !important; }
body.projector .js-plotly-plot .gtitle { font-size: 24px !important; }
body.projector .js-plotly-plot .modebar-container { display: none !important; }

@media (max-width: 768px) {
  #app-head .tagline { display: none; }
  #compact-controls { display: flex; flex-wrap: nowrap; gap: 6px; }
  #compact-controls > .form { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); flex: 1 1 auto;
    min-width: 0 !important; }
  #compact-controls > .form > * { min-width: 0 !important; }
  #draft-compact { grid-column: 1 / 3; }
  #all-settings { flex: 0 0 84px; min-width: 84px !important; align-self: stretch; }
  #tabs [role=tab] { padding: 4px 6px; font-size: 13.5px; }
  .js-plotly-plot .modebar-container { display: none !important; }
}
"""
