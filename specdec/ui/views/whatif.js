// The What-if panel and the cycle replay (tabs/whatif.py mounts them): everything is drawn here, in the browser,
// as inline SVG and HTML; moving a slider or stepping the replay never calls the server. SpecDecTheory holds the
// closed forms of specdec/engine/theory.py (tests/ui/test_whatif.py checks they give the same numbers).
(function () {
  const T = {
    E(alpha, k) { return alpha >= 1 ? k + 1 : (1 - Math.pow(alpha, k + 1)) / (1 - alpha); },
    speedup(alpha, k, c, v) { return T.E(alpha, k) / (k * c + (v === undefined ? 1 : v)); },
    // v(k) on the line through v(0) = 1 (a plain target step) and the slider's v(K) at K
    vAt(vK, K, k) { return Math.max(0.05, 1 + (vK - 1) * k / K); },
    bestK(alpha, c, kMax, vOf) {
      let best = 1, top = -Infinity;
      for (let k = 1; k <= (kMax || 16); k++) {
        const s = T.speedup(alpha, k, c, vOf ? vOf(k) : 1);
        if (s > top) { top = s; best = k; }
      }
      return best;
    },
    // accepted lengths of n simulated cycles: each draft accepted with probability alpha until the first rejection
    simulate(alpha, k, n, rand) {
      const counts = new Array(k + 1).fill(0), r = rand || Math.random;
      for (let i = 0; i < n; i++) { let a = 0; while (a < k && r() < alpha) a++; counts[a]++; }
      return counts;
    },
  };
  window.SpecDecTheory = T;

  const K_MAX = 16, W = 560, H = 260, M = { l: 46, r: 14, t: 26, b: 36 };
  const COL = { form: "#0072B2", best: "#D55E00", run: "#000000", draft: "#CC79A7", verify: "#56B4E9",
    plain: "#999999", sim: "#0072B2", mine: "#E69F00" };
  const f2 = x => (x === null || x === undefined || !isFinite(x)) ? "–" : (+x).toFixed(2);
  const f3 = x => (x === null || x === undefined) ? "–" : (x !== 0 && Math.abs(x) < 0.001 ? (+x).toExponential(1) : (+x).toFixed(3));
  const esc = s => String(s).replace(/[&<>"']/g, ch => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[ch]);
  const vis = s => s ? esc(s).replace(/\n/g, "↵").replace(/\t/g, "⇥") : "∅";

  function axes(xs, ys, xLabel, yLabel, title, xTicks) {
    const [x0, x1] = xs, [y0, y1] = ys;
    const sx = x => M.l + (x - x0) / (x1 - x0) * (W - M.l - M.r), sy = y => H - M.b - (y - y0) / (y1 - y0) * (H - M.t - M.b);
    let g = `<line x1="${M.l}" y1="${H - M.b}" x2="${W - M.r}" y2="${H - M.b}" stroke="#666"/>` +
      `<line x1="${M.l}" y1="${M.t}" x2="${M.l}" y2="${H - M.b}" stroke="#666"/>`;
    for (const t of xTicks) g += `<text x="${sx(t)}" y="${H - M.b + 15}" text-anchor="middle">${t}</text>`;
    for (let i = 0; i <= 4; i++) {
      const y = y0 + (y1 - y0) * i / 4;
      g += `<text x="${M.l - 5}" y="${sy(y) + 4}" text-anchor="end">${y.toFixed(y1 - y0 < 4 ? 1 : 0)}</text>` +
        `<line x1="${M.l}" x2="${W - M.r}" y1="${sy(y)}" y2="${sy(y)}" stroke="#ccc" stroke-width=".5"/>`;
    }
    g += `<text x="${(M.l + W - M.r) / 2}" y="${H - 4}" text-anchor="middle">${xLabel}</text>` +
      `<text x="12" y="${(M.t + H - M.b) / 2}" text-anchor="middle" transform="rotate(-90 12 ${(M.t + H - M.b) / 2})">${yLabel}</text>` +
      `<text x="${M.l}" y="16" class="wi-title">${title}</text>`;
    return { g, sx, sy };
  }
  const svg = (body, label) => `<svg viewBox="0 0 ${W} ${H}" role="img" aria-label="${esc(label)}">${body}</svg>`;
  const path = (pts, sx, sy) => pts.map((p, i) => `${i ? "L" : "M"}${sx(p[0]).toFixed(1)},${sy(p[1]).toFixed(1)}`).join("");

  function speedupPlot(s, run, vOf) {
    const ks = Array.from({ length: K_MAX }, (_, i) => i + 1);
    const form = ks.map(k => [k, T.speedup(s.alpha, k, s.c, vOf(k))]), book = ks.map(k => [k, T.speedup(s.alpha, k, s.c, 1)]);
    const best = T.bestK(s.alpha, s.c, K_MAX, vOf), bestBook = T.bestK(s.alpha, s.c, K_MAX);
    const top = Math.max(1.2, ...form.map(p => p[1]), ...book.map(p => p[1]), run && run.high ? run.high : 0, run && run.speedup ? run.speedup : 0) * 1.1;
    const a = axes([1, K_MAX], [0, top], "K (draft tokens per cycle)", "speedup (×)",
      `Speedup vs K at α = ${s.alpha.toFixed(2)}, c = ${s.c.toFixed(3)}`, [1, 4, 8, 12, 16]);
    let g = a.g + `<line x1="${a.sx(1)}" x2="${a.sx(K_MAX)}" y1="${a.sy(1)}" y2="${a.sy(1)}" stroke="#777" stroke-dasharray="2 3"/>`;
    g += `<path d="${path(book, a.sx, a.sy)}" fill="none" stroke="${COL.form}" stroke-width="1.5" stroke-dasharray="6 4" class="wi-textbook"/>`;
    g += `<path d="${path(form, a.sx, a.sy)}" fill="none" stroke="${COL.form}" stroke-width="3" class="wi-form"/>`;
    for (const [k, y] of form) g += `<circle cx="${a.sx(k)}" cy="${a.sy(y)}" r="${k === s.k ? 5 : 2.5}" fill="${COL.form}"/>`;
    const bx = a.sx(best), by = a.sy(form[best - 1][1]);
    g += `<path d="M${bx},${by - 11}l3,7 7,1 -5,5 1,7 -6,-3 -6,3 1,-7 -5,-5 7,-1z" fill="${COL.best}" class="wi-best"/>` +
      `<text x="${bx + (best < 3 ? 8 : 0)}" y="${by - 15}" text-anchor="${best < 3 ? "start" : "middle"}" fill="${COL.best}">best K = ${best}</text>`;
    if (run && run.speedup) {
      const rx = a.sx(Math.min(run.k, K_MAX)), ry = a.sy(run.speedup);
      if (run.low && run.high) g += `<line x1="${rx}" x2="${rx}" y1="${a.sy(run.low)}" y2="${a.sy(run.high)}" stroke="${COL.run}" stroke-width="1.5"/>` +
        `<line x1="${rx - 5}" x2="${rx + 5}" y1="${a.sy(run.low)}" y2="${a.sy(run.low)}" stroke="${COL.run}"/><line x1="${rx - 5}" x2="${rx + 5}" y1="${a.sy(run.high)}" y2="${a.sy(run.high)}" stroke="${COL.run}"/>`;
      g += `<rect x="${rx - 6}" y="${ry - 6}" width="12" height="12" transform="rotate(45 ${rx} ${ry})" fill="${COL.run}" class="wi-run-point"/>` +
        `<text x="${rx + 10}" y="${ry + 18}" class="wi-run-label">your run ${f2(run.speedup)}×</text>`;
    }
    const lx = W - M.r - 190;
    g += `<line x1="${lx}" x2="${lx + 24}" y1="40" y2="40" stroke="${COL.form}" stroke-width="3"/><text x="${lx + 28}" y="44">E / (K·c + v(K))</text>` +
      `<line x1="${lx}" x2="${lx + 24}" y1="56" y2="56" stroke="${COL.form}" stroke-dasharray="6 4"/><text x="${lx + 28}" y="60">textbook E / (K·c + 1)</text>`;
    return { html: svg(g, "Speedup against K"), best, bestBook, form: form[s.k - 1][1], book: book[s.k - 1][1] };
  }

  function ePlot(s) {
    const pts = Array.from({ length: 101 }, (_, i) => [i / 100, T.E(i / 100, s.k)]);
    const a = axes([0, 1], [0, s.k + 1.2], "α (accepted / evaluated)", "E (tokens / target forward)",
      `E(α, K = ${s.k}) = (1 − α^(K+1)) / (1 − α)`, [0, 0.25, 0.5, 0.75, 1]);
    const e = T.E(s.alpha, s.k);
    return svg(a.g + `<path d="${path(pts, a.sx, a.sy)}" fill="none" stroke="${COL.form}" stroke-width="2.5"/>` +
      `<line x1="${a.sx(0)}" x2="${a.sx(1)}" y1="${a.sy(s.k + 1)}" y2="${a.sy(s.k + 1)}" stroke="#777" stroke-dasharray="2 3"/>` +
      `<text x="${a.sx(0.02)}" y="${a.sy(s.k + 1) - 4}">K + 1 = ${s.k + 1}</text>` +
      `<circle cx="${a.sx(s.alpha)}" cy="${a.sy(e)}" r="6" fill="${COL.best}"/><text x="${a.sx(s.alpha) - 8}" y="${a.sy(e) - 10}" text-anchor="end">E = ${f2(e)}</text>`,
      "Expected tokens per target forward against alpha");
  }

  function cycleBar(s, vOf) {
    const draft = s.k * s.c, verify = vOf(s.k), e = T.E(s.alpha, s.k), total = Math.max(draft + verify, e);
    const x0 = 150, w = W - x0 - 20, sx = t => x0 + t / total * w, h = 34;
    let g = `<text x="${M.l}" y="16" class="wi-title">One cycle, in target-step units: it makes E = ${f2(e)} tokens</text>`;
    g += `<text x="8" y="62">speculative cycle</text><rect x="${x0}" y="40" width="${sx(draft) - x0}" height="${h}" fill="${COL.draft}"/>` +
      `<rect x="${sx(draft)}" y="40" width="${sx(draft + verify) - sx(draft)}" height="${h}" fill="${COL.verify}" stroke="#fff"/>` +
      `<text x="${x0 + 4}" y="96">draft K·c = ${f2(draft)}</text><text x="${sx(draft) + 4}" y="112">verify v(K) = ${f2(verify)}</text>`;
    g += `<text x="8" y="152">target-only, E tokens</text><rect x="${x0}" y="130" width="${sx(e) - x0}" height="${h}" fill="${COL.plain}"/>` +
      `<text x="${x0 + 4}" y="186">E × 1 step = ${f2(e)}</text>` +
      `<text x="8" y="224">speedup = ${f2(e)} / ${f2(draft + verify)} = ${f2(e / (draft + verify))}×</text>`;
    return `<svg viewBox="0 0 ${W} 240" role="img" aria-label="Time per cycle: draft against verify">${g}</svg>`;
  }

  function histogram(s, run, sim) {
    const k = s.k, mine = run && run.lengths && run.lengths.length === k + 1 ? run.lengths : null;
    const frac = c => { const n = c.reduce((x, y) => x + y, 0); return c.map(x => n ? x / n : 0); };
    const fs = frac(sim), fm = mine ? frac(mine) : null, top = Math.max(0.05, ...fs, ...(fm || [])) * 1.4;
    const a = axes([-0.5, k + 0.5], [0, top], "drafts accepted in a cycle", "share of cycles",
      `Accepted lengths: ${sim.reduce((x, y) => x + y, 0)} simulated cycles` + (mine ? " vs your run" : ""), Array.from({ length: k + 1 }, (_, i) => i));
    const bw = (a.sx(1) - a.sx(0)) * (mine ? 0.38 : 0.7);
    let g = a.g;
    fs.forEach((y, i) => { g += `<rect class="wi-sim" x="${a.sx(i) - (mine ? bw : bw / 2)}" y="${a.sy(y)}" width="${bw}" height="${a.sy(0) - a.sy(y)}" fill="${COL.sim}"/>`; });
    if (fm) fm.forEach((y, i) => { g += `<rect class="wi-mine" x="${a.sx(i)}" y="${a.sy(y)}" width="${bw}" height="${a.sy(0) - a.sy(y)}" fill="${COL.mine}" stroke="#000" stroke-dasharray="3 2"/>`; });
    const lx = W - M.r - 170;
    g += `<rect x="${lx}" y="34" width="14" height="10" fill="${COL.sim}"/><text x="${lx + 18}" y="43">simulated (α, K)</text>`;
    if (fm) g += `<rect x="${lx}" y="50" width="14" height="10" fill="${COL.mine}" stroke="#000" stroke-dasharray="3 2"/><text x="${lx + 18}" y="59">your run (K = ${run.k})</text>`;
    return svg(g, "Histogram of accepted lengths");
  }

  // --- the replay of one cycle ---------------------------------------------------------------------------------
  function stages(step) {
    const d = step.drafted.length, evals = step.drafted.filter(x => x.fate !== "unchecked").length;
    return d + 1 + evals + (step.final ? 1 : 0);
  }
  function replayHtml(steps, at) {
    if (!steps.length) return '<div class="wi-note">Run a generation, then press “Use my run”: its cycles replay here.</div>';
    const step = steps[at.step], d = step.drafted, n = d.length, evals = d.filter(x => x.fate !== "unchecked").length;
    const stage = at.stage, shown = Math.min(stage + 1, n), verified = stage >= n, decided = Math.max(0, Math.min(stage - n, evals));
    const rejectedAt = d.findIndex(x => x.fate === "rejected"), showFinal = step.final && stage === n + evals + 1;
    let label;
    if (stage < n) label = `The drafter proposes token ${stage + 1} of ${n}, with its probability q.`;
    else if (stage === n) label = n ? `One target forward scores all ${n + 1} positions at once: p for each draft.` : "A plain step: one target forward, no drafts.";
    else if (stage <= n + evals) label = `Decision ${stage - n} of ${evals}` + (step.mode === "greedy" ? " (greedy: accepted when it is the target's argmax)." : ": accept when u < min(1, p/q).");
    else label = step.final ? `The target adds its own token: ${step.final.kind}.` : "The step ended (end of text or max new tokens).";
    let toks = "";
    for (let i = 0; i < n; i++) {
      if (i >= shown) { toks += '<span class="wi-slot">…</span>'; continue; }
      const x = d[i];
      let cls = "wi-pending";
      if (i < decided) cls = `tok-${x.fate}`;
      else if (rejectedAt >= 0 && i > rejectedAt && decided > rejectedAt) cls = "tok-unchecked tok-rejected";
      toks += `<span class="wi-cell" data-pos="${i}"><span class="tok ${cls}">${vis(x.text)}</span><small>q ${f3(x.q)}${verified ? ` · p ${f3(x.p)}` : ""}</small></span>`;
    }
    if (showFinal) toks += `<span class="wi-cell" data-pos="final"><span class="tok tok-${step.final.kind}">${vis(step.final.text)}</span><small>${step.final.kind} · p ${f3(step.final.p)}</small></span>`;
    else if (step.final) toks += '<span class="wi-slot">?</span>';
    let decision = "";
    if (stage > n && stage <= n + evals) {
      const j = stage - n - 1, x = d[j];
      decision = `<div class="wi-decision" data-step="${step.index}" data-pos="${j}" data-p="${x.p}" data-q="${x.q}" data-a="${x.a}" data-u="${x.u === null ? "" : x.u}" data-fate="${x.fate}">` +
        `position ${j + 1}: p = ${f3(x.p)} · q = ${f3(x.q)} · min(1, p/q) = ${f3(x.a)} · draw u = ${x.u === null ? "none (greedy)" : f3(x.u)} → <b class="tok tok-${x.fate}">${x.fate}</b>` +
        (x.fate === "rejected" && j + 1 < n ? ` · the ${n - j - 1} later draft(s) are discarded unchecked` : "") + "</div>";
    }
    const bar = verified ? `<div class="wi-forward" style="width:${Math.min(100, 12 * (n + 1))}%">target forward × 1 over ${n + 1} position${n ? "s" : ""}</div>` : "";
    const tree = step.tree.length ? `<div class="wi-tree"><b>This step drafted a tree</b> (${step.tree.length} nodes; kept path underlined):${treeHtml(step.tree, -1)}</div>` : "";
    return `<div class="wi-where">Cycle ${step.index + 1} of ${steps.length} · stage ${stage + 1} / ${stages(step)} · ${step.mode}</div>` +
      `<div class="wi-label" aria-live="polite">${label}</div><div class="wi-tokens">${toks}</div>${bar}${decision}${tree}`;
  }
  function treeHtml(nodes, parent) {
    const kids = nodes.map((n, i) => [n, i]).filter(([n]) => n.parent === parent);
    if (!kids.length) return "";
    return '<ul class="draft-tree">' + kids.map(([n, i]) => `<li><span class="tok ${n.kept ? "tok-accepted" : (n.evaluated ? "tok-rejected" : "tok-unchecked tok-rejected")}">${vis(n.text)}</span>${treeHtml(nodes, i)}</li>`).join("") + "</ul>";
  }

  function mount(root) {
    const $ = sel => root.querySelector(sel), box = root.querySelector(".wi") || root;  // box.dataset: for tests
    const st = { run: null, steps: [], at: { step: 0, stage: 0 }, timer: null, sim: null };
    const read = () => ({ alpha: +$("#wi-alpha").value, k: +$("#wi-k").value, c: +$("#wi-c").value, v: +$("#wi-v").value });
    function draw() {
      const t0 = performance.now(), s = read();
      for (const name of ["alpha", "k", "c", "v"]) $(`#wi-${name}-out`).textContent = name === "k" ? s.k : (+s[name]).toFixed(name === "c" ? 3 : 2);
      if (st.preset) $("#wi-v").value = st.preset.v[s.k - 1];  // a preset's v(K) follows K
      s.v = +$("#wi-v").value;
      $("#wi-v-out").textContent = s.v.toFixed(2);
      const vOf = st.preset ? (k => st.preset.v[k - 1]) : (k => T.vAt(s.v, s.k, k));
      const sp = speedupPlot(s, st.run, vOf);
      $("#wi-speedup").innerHTML = sp.html;
      $("#wi-e").innerHTML = ePlot(s);
      $("#wi-bar").innerHTML = cycleBar(s, vOf);
      const mc = $("#wi-mc").checked;
      $("#wi-hist").hidden = !mc;
      if (mc) { st.sim = T.simulate(s.alpha, s.k, 2000); $("#wi-hist").innerHTML = histogram(s, st.run, st.sim); }
      let text = `E = ${f2(T.E(s.alpha, s.k))} tokens per target forward · speedup at K = ${s.k}: ${f2(sp.form)}× ` +
        `(textbook ${f2(sp.book)}×) · best K = ${sp.best} (textbook: ${sp.bestBook}).`;
      if (st.run && st.run.speedup) text += ` Your run at K = ${st.run.k}: measured ${f2(st.run.speedup)}×` +
        (st.run.low && st.run.high ? ` [${f2(st.run.low)}–${f2(st.run.high)}]` : "") + ".";
      $("#wi-summary").textContent = text;
      box.dataset.draws = (+(box.dataset.draws || 0) + 1) + "";
      box.dataset.drawMs = (performance.now() - t0).toFixed(2);
    }
    function showReplay() {
      $("#wi-replay").innerHTML = replayHtml(st.steps, st.at);
      const last = st.steps.length && st.at.step === st.steps.length - 1 && st.at.stage === stages(st.steps[st.at.step]) - 1;
      box.dataset.replayEnd = last ? "1" : "0";
    }
    function move(delta) {
      if (!st.steps.length) return;
      let { step, stage } = st.at;
      stage += delta;
      if (stage >= stages(st.steps[step])) { if (step + 1 < st.steps.length) { step++; stage = 0; } else stage--; }
      if (stage < 0) { if (step > 0) { step--; stage = stages(st.steps[step]) - 1; } else stage = 0; }
      st.at = { step, stage }; showReplay();
    }
    function cycle(delta) {
      if (!st.steps.length) return;
      st.at = { step: Math.max(0, Math.min(st.steps.length - 1, st.at.step + delta)), stage: 0 }; showReplay();
    }
    function play() {
      const btn = $("#wi-play");
      if (st.timer) { clearInterval(st.timer); st.timer = null; btn.textContent = "▶ Play"; btn.setAttribute("aria-pressed", "false"); return; }
      btn.textContent = "❚❚ Pause"; btn.setAttribute("aria-pressed", "true");
      st.timer = setInterval(() => { if (box.dataset.replayEnd === "1") play(); else move(1); }, 700);
    }
    $("#wi-v").addEventListener("input", () => { st.preset = null; $("#wi-preset-note").textContent = ""; });
    root.querySelectorAll("input").forEach(el => el.addEventListener("input", draw));
    $("#wi-back").addEventListener("click", () => move(-1));
    $("#wi-fwd").addEventListener("click", () => move(1));
    $("#wi-prev-cycle").addEventListener("click", () => cycle(-1));
    $("#wi-next-cycle").addEventListener("click", () => cycle(1));
    $("#wi-play").addEventListener("click", play);
    $("#wi-replay").addEventListener("keydown", e => {
      if (e.key === "ArrowRight") { move(1); e.preventDefault(); }
      if (e.key === "ArrowLeft") { move(-1); e.preventDefault(); }
    });
    function load(data) {
      if (!data || !data.steps) { $("#wi-run-note").textContent = "No finished run yet: press Run in the Generate tab first."; return; }
      const set = (name, x) => { if (x !== null && x !== undefined && isFinite(x)) $(`#wi-${name}`).value = x; };
      set("alpha", data.alpha); set("k", Math.min(K_MAX, Math.max(1, data.k))); set("c", data.c); set("v", data.v);
      if (data.v !== null && data.v !== undefined) st.preset = null;
      st.run = data; st.steps = data.steps; st.at = { step: 0, stage: 0 };
      const missing = ["c", "v"].filter(n => data[n] === null || data[n] === undefined);
      $("#wi-run-note").textContent = `Filled from your run: α = ${f3(data.alpha)}, K = ${data.k}` +
        (data.c !== null ? `, c = ${f3(data.c)}` : "") + (data.v !== null ? `, v(K) = ${f3(data.v)}` : "") +
        (data.speedup ? `; measured speedup ${f2(data.speedup)}× over ${data.repeats} timed repeats.` : "; no measured speedup (the run was stopped before timing).") +
        (missing.length ? ` Not measured: ${missing.join(", ")} (kept as they were).` : "") +
        (data.vllm ? " A vLLM run: p, q and the draws are not known, so the replay shows fates only." : "");
      draw(); showReplay();
    }
    function loadPreset(data) {  // a device preset's predicted c and v(K) for K = 1..16 (tabs/whatif.py)
      st.preset = data && data.v && data.v.length >= K_MAX ? data : null;
      if (st.preset) $("#wi-c").value = data.c[+$("#wi-k").value - 1];
      $("#wi-preset-note").textContent = st.preset ? `v(K) and c predicted by the cost model for ${data.pair} on ` +
        `${data.label}: v(1) = ${f2(data.v[0])} … v(16) = ${f2(data.v[K_MAX - 1])}, c = ${f3(data.c[0])}. Moving the v slider returns to the line.` : "";
      draw();
    }
    window.SpecDecWhatIf = { mount, load, loadPreset, draw, move };
    draw(); showReplay();
  }
  window.SpecDecWhatIf = { mount };
})();
