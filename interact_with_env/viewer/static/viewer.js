/* EnvScaler run viewer. Our own code, no libraries; charts are SVG drawn here.
 *
 * Invariant: text from the run (tasks, messages, observations, ids) reaches the page only as
 * text nodes or attribute values built here, never as HTML: transcripts are model output.
 * The page's Content-Security-Policy forbids network requests besides the served viewer's own
 * parts, so nothing in a run can make the page fetch.
 */
"use strict";

(function () {
  const INDEX = JSON.parse(document.getElementById("es-index").textContent);
  const EPISODES = INDEX.episodes;
  EPISODES.forEach((e, k) => {
    e.k = k;
  });
  const BY_KEY = new Map(EPISODES.map((e) => [e.key, e]));
  const SCENARIOS = new Map(INDEX.scenarios.map((s, k) => [s.id, Object.assign(s, { k })]));
  const ENVS = new Map(INDEX.envs.map((e, k) => [e.id, Object.assign(e, { k })]));
  const ROW_H = 30;
  const SVG_NS = "http://www.w3.org/2000/svg";
  const view = document.getElementById("view");
  let renderToken = 0;

  // ------------------------------------------------------------------ DOM and formatting
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    setAttrs(el, attrs);
    append(el, children);
    return el;
  }

  function s(tag, attrs, ...children) {
    const el = document.createElementNS(SVG_NS, tag);
    setAttrs(el, attrs);
    append(el, children);
    return el;
  }

  function setAttrs(el, attrs) {
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
      else el.setAttribute(key, value === true ? "" : String(value));
    }
  }

  function append(el, children) {
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      el.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
    }
  }

  /** Replaces the children of ``el`` (nested arrays flattened, null and false skipped). */
  function fill(el, ...children) {
    el.replaceChildren();
    append(el, children);
  }

  function show(...children) {
    append(view, children);
  }

  function fmt(x, digits = 3) {
    if (x === null || x === undefined || Number.isNaN(x)) return "–";
    if (typeof x !== "number") return String(x);
    return Number.isInteger(x) ? x.toLocaleString("en") : x.toFixed(digits).replace(/0+$/, "").replace(/\.$/, "");
  }

  const pct = (x) => (x === null || x === undefined ? "–" : `${(100 * x).toFixed(1)}%`);
  const json = (value) => JSON.stringify(value, null, 2);
  const count = (n, word) => `${n.toLocaleString("en")} ${word}${n === 1 ? "" : "s"}`;
  const mean = (xs) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null);

  function hash(page, arg, params) {
    let out = `#/${page}`;
    if (arg !== undefined && arg !== null) out += `/${encodeURIComponent(arg)}`;
    const query = params ? params.toString() : "";
    return query ? `${out}?${query}` : out;
  }

  function rewardClass(e) {
    if (e.reward === null) return "warn";
    return e.solved ? "ok" : "bad";
  }

  function pre(value) {
    return h("pre", {}, typeof value === "string" ? value : json(value));
  }

  function fold(summary, body, open) {
    return h("details", { open: !!open }, h("summary", {}, summary), body);
  }

  function table(header, rows, numeric) {
    const isNum = (i) => numeric && numeric.includes(i);
    return h(
      "table",
      { class: "plain" },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          header.map((c, i) => h("th", { class: isNum(i) ? "num" : null }, c)),
        ),
      ),
      h(
        "tbody",
        {},
        rows.map((r) =>
          h(
            "tr",
            {},
            r.map((c, i) => h("td", { class: isNum(i) ? "num" : null }, c)),
          ),
        ),
      ),
    );
  }

  /** A heading and a bulleted list of ``items``, or nothing when there are none. */
  function bulletSection(title, items) {
    return items.length
      ? [
          h("h2", {}, title),
          h(
            "ul",
            {},
            items.map((item) => h("li", {}, item)),
          ),
        ]
      : null;
  }

  function kv(pairs) {
    return h(
      "div",
      { class: "kv" },
      pairs.filter((p) => p).map(([k, v]) => [h("div", {}, k), h("div", {}, v)]),
    );
  }

  function card(label, big, note) {
    return h(
      "div",
      { class: "card" },
      h("div", { class: "label" }, label),
      h("div", { class: "big" }, big),
      note ? h("div", { class: "label" }, note) : null,
    );
  }

  // ------------------------------------------------------------------ lazy parts
  const parts = new Map();

  function loadPart(name) {
    if (!parts.has(name)) parts.set(name, readPart(name));
    return parts.get(name);
  }

  async function readPart(name) {
    const el = document.getElementById(`es-part-${name}`);
    if (el) {
      const text = atob(el.textContent.trim());
      const bytes = new Uint8Array(text.length);
      for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
      if (typeof DecompressionStream === "undefined") throw new Error("this browser has no DecompressionStream");
      const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
      return JSON.parse(await new Response(stream).text());
    }
    if (INDEX.served) {
      const response = await fetch(`part/${INDEX.served.generation}/${name}`);
      if (response.status === 410) throw new Error("the run changed on disk since this page was loaded: reload it");
      if (!response.ok) throw new Error(`the viewer answered ${response.status}`);
      return response.json();
    }
    throw new Error(`part ${name} is not in this file`);
  }

  async function record(kind, k) {
    const size = INDEX.part_size[kind];
    const chunk = await loadPart(`${kind}${Math.floor(k / size)}`);
    return chunk[k % size];
  }

  // ------------------------------------------------------------------ filters
  const FILTERS = ["src", "env", "scen", "mode", "term", "flag", "outcome", "side", "rmin", "rmax", "q"];

  function matches(e, f) {
    if (f.src !== null && e.src !== f.src) return false;
    if (f.env && e.env !== f.env) return false;
    if (f.scen && e.scen !== f.scen) return false;
    if (f.mode && e.mode !== f.mode) return false;
    if (f.term && e.term !== f.term) return false;
    if (f.flag && !(f.flag === "(none)" ? e.flags.length === 0 : e.flags.includes(f.flag))) return false;
    if (f.outcome === "solved" && e.solved !== true) return false;
    if (f.outcome === "failed" && e.solved !== false) return false;
    if (f.outcome === "no reward" && e.reward !== null) return false;
    if (f.side && (e.collateral > 0 ? "changed outside the reference" : "only what the reference changes") !== f.side)
      return false;
    if (f.rmin !== null && !(e.reward !== null && e.reward >= f.rmin)) return false;
    if (f.rmax !== null && !(e.reward !== null && e.reward <= f.rmax)) return false;
    if (f.q && !e.key.toLowerCase().includes(f.q)) return false;
    return true;
  }

  function readFilters(params) {
    const num = (v) => (v === null || v === "" || Number.isNaN(Number(v)) ? null : Number(v));
    return {
      src: params.has("src") ? params.get("src") : null,
      env: params.get("env") || "",
      scen: params.get("scen") || "",
      mode: params.get("mode") || "",
      term: params.get("term") || "",
      flag: params.get("flag") || "",
      outcome: params.get("outcome") || "",
      side: params.get("side") || "",
      rmin: num(params.get("rmin")),
      rmax: num(params.get("rmax")),
      q: (params.get("q") || "").toLowerCase(),
    };
  }

  function filtered(params) {
    const f = readFilters(params);
    return EPISODES.filter((e) => matches(e, f));
  }

  function tally(values) {
    const counts = new Map();
    for (const v of values) counts.set(v, (counts.get(v) || 0) + 1);
    return [...counts.entries()].sort((a, b) => String(a[0]).localeCompare(String(b[0])));
  }

  function filterBar(params, onChange) {
    const select = (name, label, values, all) => {
      const current = params.has(name) ? params.get(name) : null;
      const options = [h("option", { value: "", selected: current === null }, all)];
      for (const [value, n] of values) {
        options.push(
          h(
            "option",
            { value: `=${value}`, selected: current === value },
            `${value === "" ? "(run folder)" : value} (${n})`,
          ),
        );
      }
      const el = h(
        "select",
        {
          name,
          onchange: () => {
            if (el.value === "") params.delete(name);
            else params.set(name, el.value.slice(1));
            onChange();
          },
        },
        options,
      );
      return h("label", {}, label, el);
    };
    const input = (name, label, type, extra) => {
      const el = h(
        "input",
        Object.assign(
          {
            name,
            type,
            value: params.get(name) || "",
            onchange: () => {
              if (el.value === "") params.delete(name);
              else params.set(name, el.value);
              onChange();
            },
          },
          extra,
        ),
      );
      return h("label", {}, label, el);
    };
    const flags = tally(EPISODES.flatMap((e) => (e.flags.length ? e.flags : ["(none)"])));
    const outcomes = tally(EPISODES.map((e) => (e.reward === null ? "no reward" : e.solved ? "solved" : "failed")));
    const sources = tally(EPISODES.map((e) => e.src));
    const sides = EPISODES.some((e) => e.collateral > 0)
      ? tally(
          EPISODES.map((e) => (e.collateral > 0 ? "changed outside the reference" : "only what the reference changes")),
        )
      : [];
    return h(
      "div",
      { class: "filters" },
      sources.length > 1 ? select("src", "folder", sources, "all folders") : null,
      select("env", "environment", tally(EPISODES.map((e) => e.env)), "all environments"),
      select("scen", "scenario", tally(EPISODES.map((e) => e.scen)), "all scenarios"),
      select("mode", "mode", tally(EPISODES.map((e) => e.mode)), "all modes"),
      select("outcome", "outcome", outcomes, "any outcome"),
      sides.length ? select("side", "collateral", sides, "any change") : null,
      select("term", "termination", tally(EPISODES.map((e) => e.term)), "any termination"),
      select("flag", "flag", flags, "any flag"),
      input("rmin", "reward ≥", "number", { step: "0.05", min: "0", max: "1" }),
      input("rmax", "reward ≤", "number", { step: "0.05", min: "0", max: "1" }),
      input("q", "episode id contains", "search", {}),
      h(
        "button",
        {
          type: "button",
          onclick: () => {
            FILTERS.forEach((n) => params.delete(n));
            onChange(true);
          },
        },
        "clear filters",
      ),
    );
  }

  // ------------------------------------------------------------------ virtual list
  function virtualList(items, columns, href, sortState, onSort) {
    const template = columns.map((c) => c.width || "1fr").join(" ");
    const head = h(
      "div",
      { class: "grid-head" },
      columns.map((c) =>
        h(
          "span",
          {
            class: [c.num ? "num" : "", sortState && sortState.key === c.key ? "sorted" : ""].join(" "),
            title: c.sort ? "sort by this column" : null,
            onclick: c.sort && onSort ? () => onSort(c.key) : null,
          },
          c.label,
          sortState && sortState.key === c.key ? (sortState.desc ? " ▼" : " ▲") : "",
        ),
      ),
    );
    head.style.gridTemplateColumns = template;
    const viewport = h("div", { class: "viewport" });
    viewport.style.height = `${items.length * ROW_H + 2}px`;
    const spacer = h("div", {});
    spacer.style.height = `${items.length * ROW_H}px`;
    viewport.appendChild(spacer);
    let pending = false;
    const draw = () => {
      pending = false;
      const height = viewport.clientHeight || 800;
      const first = Math.max(0, Math.floor(viewport.scrollTop / ROW_H) - 8);
      const last = Math.min(items.length, Math.ceil((viewport.scrollTop + height) / ROW_H) + 8);
      const rows = [];
      for (let i = first; i < last; i++) {
        const item = items[i];
        const row = h(
          "a",
          { class: "grid-row", href: href(item), "data-key": item.key || item.id },
          columns.map((c) =>
            h("span", { class: c.num ? "num" : null, title: c.title ? c.title(item) : null }, c.cell(item)),
          ),
        );
        row.style.top = `${i * ROW_H}px`;
        row.style.gridTemplateColumns = template;
        rows.push(row);
      }
      fill(spacer, ...rows);
    };
    viewport.addEventListener("scroll", () => {
      if (!pending) {
        pending = true;
        requestAnimationFrame(draw);
      }
    });
    return { el: h("div", { class: "list" }, head, viewport), draw };
  }

  const byName = new Intl.Collator("en", { numeric: true }).compare;

  /** Items in the order of the chosen column (missing values last), ties and the default by name
   * ("#2" before "#10"): the order does not depend on the order episodes were written in. */
  function sortItems(items, columns, sortState) {
    const column = columns.find((c) => c.key === sortState.key && c.sort);
    const sign = sortState.desc ? -1 : 1;
    const keyed = items.map((item) => [column ? column.sort(item) : null, item.key || item.id, item]);
    keyed.sort((a, b) => {
      const [x, y] = [a[0], b[0]];
      if (x !== y) {
        if (x === null || x === undefined) return 1;
        if (y === null || y === undefined) return -1;
        return (x < y ? -1 : 1) * sign;
      }
      return byName(a[1], b[1]);
    });
    return keyed.map((entry) => entry[2]);
  }

  function checkDots(statuses) {
    return h(
      "span",
      { class: "dots" },
      [...statuses].map((c) => h("span", { class: `dot-${c}` }, c === "t" ? "●" : c === "f" ? "○" : "!")),
    );
  }

  // ------------------------------------------------------------------ pages: episodes
  const EPISODE_COLUMNS = [
    {
      key: "id",
      label: "episode",
      width: "minmax(160px, 2.4fr)",
      sort: (e) => e.key,
      cell: (e) => [e.src ? h("span", { class: "muted" }, `${e.src}/`) : null, e.id],
      title: (e) => e.key,
    },
    { key: "env", label: "environment", width: "minmax(80px, 1.2fr)", sort: (e) => e.env, cell: (e) => e.env },
    { key: "mode", label: "mode", width: "64px", sort: (e) => e.mode, cell: (e) => `${e.mode}/${e.agent_mode}` },
    {
      key: "reward",
      label: "reward",
      width: "64px",
      num: true,
      sort: (e) => e.reward,
      cell: (e) => h("span", { class: rewardClass(e) }, e.reward === null ? "none" : fmt(e.reward)),
    },
    {
      key: "checks",
      label: "checks",
      width: "80px",
      sort: (e) => e.checks.split("t").length - 1,
      cell: (e) => checkDots(e.checks),
      title: (e) => `${e.checks.split("t").length - 1} of ${e.checks.length} true`,
    },
    { key: "calls", label: "calls", width: "48px", num: true, sort: (e) => e.calls, cell: (e) => e.calls },
    {
      key: "errors",
      label: "errors",
      width: "52px",
      num: true,
      sort: (e) => e.errors,
      cell: (e) => h("span", { class: e.errors ? "bad" : null }, e.errors),
    },
    { key: "turns", label: "turns", width: "48px", num: true, sort: (e) => e.turns, cell: (e) => e.turns },
    { key: "term", label: "termination", width: "minmax(90px, 1fr)", sort: (e) => e.term, cell: (e) => e.term },
    {
      key: "flags",
      label: "flags",
      width: "minmax(80px, 1.2fr)",
      sort: (e) => e.flags.join(","),
      cell: (e) => e.flags.join(", "),
    },
    { key: "tokens", label: "tokens", width: "70px", num: true, sort: (e) => e.tokens, cell: (e) => fmt(e.tokens) },
  ];

  /** A page of the filter bar over the episodes and what ``draw(params, into, redraw)`` makes of
   * those it selects; a filter change redraws only that part (the bar keeps its focus). */
  function filteredPage(page, title, draw) {
    return (route) => {
      const params = route.params;
      const results = h("div", {});
      const redraw = (full) => {
        history.replaceState(null, "", hash(page, null, params));
        if (full) {
          render();
          return;
        }
        draw(params, results, redraw);
      };
      show(h("h1", {}, title), filterBar(params, redraw), results);
      draw(params, results, redraw);
    };
  }

  /** The episodes the list's filters select, in its order. */
  function episodeList(params) {
    return sortItems(filtered(params), EPISODE_COLUMNS, {
      key: params.get("sort") || "",
      desc: params.get("desc") === "1",
    });
  }

  function drawEpisodes(params, results) {
    const sortState = { key: params.get("sort") || "", desc: params.get("desc") === "1" };
    const items = episodeList(params);
    const rewarded = items.filter((e) => e.reward !== null);
    const solved = rewarded.filter((e) => e.solved).length;
    const onSort = (key) => {
      if (params.get("sort") === key) params.set("desc", params.get("desc") === "1" ? "0" : "1");
      else {
        params.set("sort", key);
        params.set("desc", "0");
      }
      history.replaceState(null, "", hash("episodes", null, params));
      drawEpisodes(params, results);
    };
    const list = virtualList(
      items,
      EPISODE_COLUMNS,
      (e) => hash("episode", e.key, listQuery(params)),
      sortState,
      onSort,
    );
    fill(
      results,
      h(
        "div",
        { class: "summary-line", id: "episode-count" },
        `${count(items.length, "episode")} of ${EPISODES.length.toLocaleString("en")}`,
        rewarded.length
          ? ` · solved ${solved} (${pct(solved / rewarded.length)}) · mean reward ${fmt(mean(rewarded.map((e) => e.reward)))}`
          : "",
        items.length - rewarded.length ? ` · ${items.length - rewarded.length} without a reward` : "",
        " · ",
        h("a", { href: hash("charts", null, filterQuery(params)) }, "charts of these episodes"),
      ),
      items.length ? list.el : h("p", { class: "muted" }, "No episode matches these filters."),
    );
    if (items.length) list.draw();
  }

  function filterQuery(params) {
    const out = new URLSearchParams();
    for (const name of FILTERS) if (params.has(name)) out.set(name, params.get(name));
    return out;
  }

  /** The filters and the order of a list: an episode's page carries them, for its previous, next and back links. */
  function listQuery(params) {
    const out = filterQuery(params);
    for (const name of ["sort", "desc"]) if (params.has(name)) out.set(name, params.get(name));
    return out;
  }

  // ------------------------------------------------------------------ pages: one episode
  async function episodePage(route, token) {
    const e = BY_KEY.get(route.arg);
    if (!e) {
      show(h("h1", {}, "Episode not found"), h("p", {}, `No episode ${route.arg} in this run.`));
      return;
    }
    const scenario = SCENARIOS.get(e.scen);
    const env = ENVS.get(e.env);
    const query = listQuery(route.params);
    const nav = h("div", { class: "nav-row" }, h("a", { href: hash("episodes", null, query) }, "← episodes"));
    const keys = episodeList(route.params).map((item) => item.key);
    const at = keys.indexOf(e.key);
    if (at >= 0) {
      const link = (i, label) =>
        i >= 0 && i < keys.length
          ? h("a", { href: hash("episode", keys[i], query) }, label)
          : h("span", { class: "muted" }, label);
      nav.append(
        link(at - 1, "‹ previous"),
        h("span", { class: "muted" }, `${at + 1} of ${keys.length}`),
        link(at + 1, "next ›"),
      );
    }
    const rewardBox = h(
      "div",
      { class: `reward-box ${rewardClass(e)}` },
      e.reward === null ? "no reward" : fmt(e.reward),
      h("small", {}, e.reward === null ? "not scored" : e.solved ? "solved" : "not solved"),
    );
    const body = h("div", { id: "episode-body" }, h("p", { class: "muted" }, "Loading the transcript…"));
    show(
      nav,
      h("h1", {}, e.src ? h("span", { class: "muted" }, `${e.src}/`) : null, e.id),
      h(
        "div",
        { class: "episode-head" },
        rewardBox,
        kv([
          ["environment", env ? h("a", { href: hash("env", e.env) }, e.env) : e.env],
          [
            "scenario",
            scenario
              ? h("a", { href: hash("scenario", e.scen) }, e.scen)
              : [e.scen, h("span", { class: "muted" }, " (not in the scenarios read)")],
          ],
          ["mode", `${e.mode} / ${e.agent_mode}`],
          ["model", e.model || "–"],
          ["termination", e.term],
          ["flags", e.flags.length ? e.flags.map((f) => h("span", { class: "pill warn" }, f)) : "–"],
          ["tool calls", `${e.calls} (${e.errors} failed) over ${count(e.turns, "agent turn")}`],
          ["tokens", fmt(e.tokens)],
          ["wall time", e.wall_s === null || e.wall_s === undefined ? "–" : `${fmt(e.wall_s, 2)} s`],
        ]),
      ),
      body,
    );
    let detail;
    try {
      detail = await record("e", e.k);
    } catch (err) {
      if (token === renderToken) fill(body, h("p", { class: "bad" }, `Could not load this transcript: ${err.message}`));
      return;
    }
    let checklist = null;
    if (scenario) {
      try {
        checklist = (await record("s", scenario.k)).checklist;
      } catch (err) {
        checklist = null;
      }
    }
    if (token !== renderToken) return;
    fill(body, ...episodeBody(e, detail, checklist));
  }

  function episodeBody(e, d, checklist) {
    const out = [];
    out.push(h("h2", {}, "Task"), h("div", { class: "msg user" }, h("div", { class: "text" }, d.task || "–")));
    out.push(h("h2", {}, "Checks"));
    if (!d.reward) {
      out.push(h("p", { class: "warn" }, "This trajectory has no reward: it was stored without one (see Problems)."));
    } else {
      out.push(checksList(d.reward, checklist));
      out.push(
        kv([
          ["final reward", fmt(d.reward.final)],
          d.reward.checklist !== undefined && d.reward.checklist !== null
            ? ["checklist share", fmt(d.reward.checklist)]
            : null,
          d.reward.collateral && d.reward.collateral.length
            ? ["collateral changes", d.reward.collateral.map((p) => h("span", { class: "pill bad" }, p))]
            : null,
          [
            "state matches the reference",
            d.reward.state_match === null ? "– (no reference)" : d.reward.state_match ? "yes" : "no",
          ],
          ["checker errors", d.reward.checker_errors],
          ["progress after each step", d.reward.progress.length ? progressChart(d.reward.progress) : "–"],
        ]),
      );
    }
    out.push(h("h2", {}, "Transcript"), h("div", { class: "transcript" }, d.transcript.map(entry)));
    if (d.user_view.length) {
      out.push(
        h("h2", {}, "The simulated user's side"),
        fold(
          `${count(d.user_view.length, "message")}: its instructions and turns, as it saw them`,
          h("div", { class: "transcript" }, d.user_view.map(entry)),
        ),
      );
    }
    out.push(
      h("h2", {}, "Accounting"),
      kv([
        [
          "usage",
          Object.entries(d.usage)
            .map(([k, v]) => `${k} ${fmt(v, 2)}`)
            .join(" · "),
        ],
        [
          "timings (s)",
          Object.entries(d.timings)
            .map(([k, v]) => `${k} ${fmt(v, 2)}`)
            .join(" · "),
        ],
        ["seed", d.seed === null ? "–" : d.seed],
        ["turns asked again for the answer", d.answers_asked],
        ["stored at", h("span", { class: "mono" }, d.where)],
      ]),
    );
    return out;
  }

  function checksList(reward, checklist) {
    return h(
      "ul",
      { class: "checks", id: "checks" },
      reward.checks.map((c, i) => {
        const mark = c.status === "true" ? ["✓", "ok"] : c.status === "false" ? ["✗", "bad"] : ["!", "warn"];
        const code = checklist && checklist[i] && checklist[i].item === c.check_item ? checklist[i].code : null;
        return h(
          "li",
          { class: `check check-${c.status}` },
          h("span", { class: mark[1] }, `${mark[0]} `),
          c.check_item || `check ${i + 1}`,
          h("span", { class: `pill ${mark[1]}` }, c.status === "error" ? "error" : c.status),
          c.error ? h("div", { class: "warn mono" }, c.error) : null,
          code ? fold("checker code", pre(code)) : null,
        );
      }),
    );
  }

  function entry(item) {
    if (item.kind === "step") return stepCard(item);
    const role = item.role;
    const text = h("div", { class: "text" }, item.text);
    const body = [
      h("div", { class: "role" }, role),
      item.reasoning ? fold("reasoning", pre(item.reasoning)) : null,
      role === "system"
        ? fold(`system prompt (${item.text.length.toLocaleString("en")} characters)`, text)
        : item.text
          ? text
          : null,
      (item.calls || []).map((c) =>
        h(
          "code",
          { class: "call" },
          `→ ${c.name}(${typeof c.arguments === "string" ? c.arguments : JSON.stringify(c.arguments)})`,
        ),
      ),
    ];
    return h("div", { class: `msg ${role}` }, body);
  }

  function stepCard(step) {
    const args = typeof step.arguments === "string" ? step.arguments : JSON.stringify(step.arguments);
    const status = step.error_type
      ? h("span", { class: "pill bad" }, step.error_type)
      : h("span", { class: "pill ok" }, "ok");
    return h(
      "div",
      { class: `step${step.error_type ? " failed" : ""}`, "data-step": step.index },
      h(
        "div",
        { class: "head" },
        `step ${step.index} · ${step.name}(${args}) `,
        status,
        h("span", { class: "muted" }, ` ${fmt(step.ms, 1)} ms`),
        step.progress === null ? null : h("span", { class: "muted" }, ` · progress ${fmt(step.progress)}`),
      ),
      pre(step.observation),
      step.diff.length
        ? h("ul", { class: "diff" }, step.diff.map(diffLine))
        : h("div", { class: "muted" }, "no state change"),
      step.sent ? fold("as sent to the agent", pre(step.sent)) : null,
    );
  }

  function diffLine(op) {
    const value = "value" in op ? ` = ${JSON.stringify(op.value)}` : "";
    return h("li", { class: `op-${op.op}` }, `${op.op} ${op.path}${value}`);
  }

  function progressChart(progress) {
    const w = 220,
      hgt = 44,
      n = progress.length;
    const x = (i) => (n === 1 ? w / 2 : 4 + (i * (w - 8)) / (n - 1));
    const y = (v) => hgt - 4 - v * (hgt - 8);
    const points = progress.map((v, i) => `${x(i)},${y(v)}`).join(" ");
    return h(
      "span",
      { class: "progress" },
      s(
        "svg",
        { viewBox: `0 0 ${w} ${hgt}`, width: w, height: hgt },
        s("line", { class: "gridline", x1: 0, x2: w, y1: y(1), y2: y(1) }),
        s("polyline", { class: "line s0", points }),
        progress.map((v, i) =>
          s("circle", { class: "s0", cx: x(i), cy: y(v), r: 2.5 }, s("title", {}, `after step ${i}: ${fmt(v)}`)),
        ),
      ),
      ` ${progress.map((v) => fmt(v, 2)).join(" → ")}`,
    );
  }

  // ------------------------------------------------------------------ charts
  /** Axis ticks from 0 to at least ``value``: about four steps of 1, 2 or 5 times a power of ten (whole steps for counts). */
  function ticks(value, whole) {
    const rough = Math.max(value, whole ? 1 : 1e-9) / 4;
    const power = 10 ** Math.floor(Math.log10(rough));
    let step = [1, 2, 5, 10].map((m) => m * power).find((c) => c >= rough);
    if (whole) step = Math.max(1, Math.round(step));
    const top = Math.max(step, Math.ceil(value / step) * step);
    const out = [];
    for (let v = 0; v <= top + step / 2; v += step) out.push(v);
    return out;
  }

  /** The frame of a chart: a 480×250 SVG, its plot area, a ``y`` scale from 0 to the last of
   * ``yTicks``; ``grid()`` draws the labelled grid lines, ``finish()`` the axes and their titles. */
  function plotFrame({ yTicks, fmtY, bottom, xTitle, yTitle }) {
    const w = 480,
      hgt = 250,
      right = 12,
      top = 14;
    const left = 26 + 6.5 * Math.max(...yTicks.map((v) => fmtY(v).length));
    const plotW = w - left - right,
      plotH = hgt - top - bottom;
    const max = yTicks[yTicks.length - 1];
    const frame = {
      svg: s("svg", { viewBox: `0 0 ${w} ${hgt}`, role: "img" }),
      left,
      top,
      right: w - right,
      plotW,
      plotH,
      base: top + plotH,
      y: (v) => top + plotH - (plotH * v) / max,
      height: (v) => (plotH * v) / max,
      grid() {
        for (const v of yTicks) {
          const y = frame.y(v);
          frame.svg.append(
            s("line", { class: "gridline", x1: left, x2: w - right, y1: y, y2: y }),
            s("text", { x: left - 5, y: y + 4, "text-anchor": "end" }, fmtY(v)),
          );
        }
      },
      finish() {
        const middle = top + plotH / 2;
        frame.svg.append(
          s("line", { class: "axis", x1: left, x2: w - right, y1: frame.base, y2: frame.base }),
          s("line", { class: "axis", x1: left, x2: left, y1: top, y2: frame.base }),
          xTitle ? s("text", { x: left + plotW / 2, y: hgt - 4, "text-anchor": "middle" }, xTitle) : "",
          yTitle
            ? s("text", { x: 12, y: middle, "text-anchor": "middle", transform: `rotate(-90 12 ${middle})` }, yTitle)
            : "",
        );
        return frame.svg;
      },
    };
    return frame;
  }

  function barChart({ bars, yMax, yFormat, xTitle, yTitle, legend, whole }) {
    const total = (b) => b.segments.reduce((a, seg) => a + seg.value, 0);
    const yTicks = yMax ? [0, 0.25, 0.5, 0.75, 1].map((f) => f * yMax) : ticks(Math.max(0, ...bars.map(total)), whole);
    const fmtY = yFormat || ((v) => fmt(v, 2));
    const longest = Math.max(0, ...bars.map((b) => b.label.length));
    const roughSlot = 400 / Math.max(1, bars.length);
    const rotate = longest * 6.2 > roughSlot - 4;
    const frame = plotFrame({ yTicks, fmtY, bottom: (rotate ? 84 : 30) + (xTitle ? 12 : 0), xTitle, yTitle });
    frame.grid();
    const slot = frame.plotW / Math.max(1, bars.length);
    const barW = Math.min(slot * 0.76, 64);
    bars.forEach((b, i) => {
      let y = frame.base;
      const x = frame.left + i * slot + (slot - barW) / 2;
      for (const seg of b.segments) {
        y -= frame.height(seg.value);
        frame.svg.append(
          s(
            "rect",
            { class: `bar ${seg.cls || ""}`, x, y, width: barW, height: Math.max(0, frame.height(seg.value)) },
            s("title", {}, seg.title || `${b.label}: ${fmtY(seg.value)}`),
          ),
        );
      }
      if (bars.length <= 24 && (b.note !== undefined || total(b) > 0))
        frame.svg.append(
          s(
            "text",
            { x: x + barW / 2, y: y - 3, "text-anchor": "middle" },
            b.note !== undefined ? b.note : fmtY(total(b)),
          ),
        );
      const lx = frame.left + i * slot + slot / 2,
        ly = frame.base + 14;
      frame.svg.append(
        rotate
          ? s(
              "text",
              { x: lx, y: ly, "text-anchor": "end", transform: `rotate(-40 ${lx} ${ly})` },
              b.label.length > 18 ? `${b.label.slice(0, 17)}…` : b.label,
            )
          : s("text", { x: lx, y: ly, "text-anchor": "middle" }, b.label),
      );
    });
    const svg = frame.finish();
    return legend ? [svg, legendRow(legend)] : svg;
  }

  function lineChart({ series, xs, xTitle, yTitle, band, target }) {
    const frame = plotFrame({ yTicks: [0, 0.25, 0.5, 0.75, 1], fmtY: (v) => fmt(v, 2), bottom: 40, xTitle, yTitle });
    const { svg, left, plotW, y } = frame;
    const xMin = Math.min(...xs),
      xMax = Math.max(...xs);
    const x = (v) => left + (xMax === xMin ? plotW / 2 : ((v - xMin) * plotW) / (xMax - xMin));
    if (band)
      svg.append(
        s(
          "rect",
          { class: "band", x: left, width: plotW, y: y(band[1]), height: y(band[0]) - y(band[1]) },
          s("title", {}, `band ${band[0]}–${band[1]}`),
        ),
      );
    frame.grid();
    if (target !== undefined && target !== null)
      svg.append(
        s(
          "line",
          { class: "axis", "stroke-dasharray": "4 3", x1: left, x2: frame.right, y1: y(target), y2: y(target) },
          s("title", {}, `target ${target}`),
        ),
      );
    for (const v of xs) svg.append(s("text", { x: x(v), y: frame.base + 15, "text-anchor": "middle" }, String(v)));
    series.forEach((line, i) => {
      const cls = `s${i % 6}`;
      const pts = line.points.filter((p) => p[1] !== null && p[1] !== undefined);
      if (pts.length > 1)
        svg.append(s("polyline", { class: `line ${cls}`, points: pts.map((p) => `${x(p[0])},${y(p[1])}`).join(" ") }));
      for (const p of pts)
        svg.append(
          s(
            "circle",
            { class: cls, cx: x(p[0]), cy: y(p[1]), r: 3.5 },
            s("title", {}, `${line.name}, ${p[0]}: ${fmt(p[1])}${p[2] ? ` (${p[2]})` : ""}`),
          ),
        );
    });
    return [frame.finish(), legendRow(series.map((line, i) => [line.name, `s${i % 6}`]))];
  }

  function legendRow(items) {
    return h(
      "div",
      { class: "legend" },
      items.map(([name, cls]) => h("span", {}, h("i", { class: cls }), name)),
    );
  }

  function chartBox(id, title, body, note) {
    return h(
      "section",
      { class: "chart", id },
      h("h3", {}, title),
      body,
      note ? h("div", { class: "note" }, note) : null,
    );
  }

  function comb(n, k) {
    if (k < 0 || k > n) return 0;
    let out = 1;
    for (let i = 1; i <= k; i++) out = (out * (n - k + i)) / i;
    return out;
  }

  /** pass^k (τ²-bench): per (scenario, mode) with n scored episodes of which c solved, C(c,k)/C(n,k), averaged over groups with n ≥ k. */
  function passHatK(items) {
    const groups = new Map();
    for (const e of items) {
      if (e.reward === null) continue;
      const key = `${e.scen}|${e.mode}`;
      const g = groups.get(key) || [0, 0];
      g[0] += e.solved ? 1 : 0;
      g[1] += 1;
      groups.set(key, g);
    }
    const nMax = Math.max(0, ...[...groups.values()].map((g) => g[1]));
    const out = [];
    for (let k = 1; k <= Math.min(nMax, 16); k++) {
      const values = [...groups.values()].filter((g) => g[1] >= k).map(([c, n]) => comb(c, k) / comb(n, k));
      if (values.length) out.push([k, mean(values), `${values.length} scenario groups`]);
    }
    return out;
  }

  function rewardChart(items) {
    const scored = items.filter((e) => e.reward !== null);
    const bins = Array.from({ length: 11 }, (_, i) => ({ label: i === 10 ? "1" : i === 0 ? "0" : `.${i}`, n: 0 }));
    for (const e of scored) bins[Math.min(10, Math.floor(e.reward * 10 + 1e-9))].n += 1;
    const bars = bins.map((b, i) => ({
      label: b.label,
      segments: [{ value: b.n, cls: i === 10 ? "ok" : i === 0 ? "bad" : "", title: `${b.label}: ${b.n} episodes` }],
    }));
    const left = items.length - scored.length;
    return chartBox(
      "chart-reward",
      "Reward distribution",
      barChart({
        bars,
        whole: true,
        xTitle: "final reward (bins of 0.1 from the value shown; 1: every check true)",
        yTitle: "episodes",
      }),
      `${count(scored.length, "scored episode")}${left ? `; ${left} without a reward left out` : ""}.`,
    );
  }

  function passkChart(items) {
    const modes = [...new Set(items.map((e) => e.mode))].sort();
    const series = [{ name: "all", points: passHatK(items) }];
    if (modes.length > 1)
      for (const m of modes) series.push({ name: `${m} mode`, points: passHatK(items.filter((e) => e.mode === m)) });
    const ks = [...new Set(series.flatMap((line) => line.points.map((p) => p[0])))].sort((a, b) => a - b);
    if (!ks.length) return chartBox("chart-passk", "pass^k", h("p", { class: "muted" }, "No scored episode."));
    return chartBox(
      "chart-passk",
      "pass^k",
      lineChart({ series, xs: ks, xTitle: "k (episodes of one scenario, all solved)", yTitle: "pass^k" }),
      "Per scenario and mode: C(solved, k) / C(episodes, k), averaged over scenarios with at least k episodes.",
    );
  }

  function difficultyChart(items, params, redraw) {
    const dims = new Set();
    for (const scenario of SCENARIOS.values())
      if (scenario.difficulty)
        for (const [key, v] of Object.entries(scenario.difficulty))
          if (typeof v === "number" && Number.isInteger(v)) dims.add(key);
    if (!dims.size)
      return chartBox(
        "chart-difficulty",
        "Pass rate by difficulty level",
        h("p", { class: "muted" }, "No scenario here records a difficulty."),
      );
    const dimList = [...dims].sort();
    const dim = dims.has(params.get("level")) ? params.get("level") : dims.has("calls") ? "calls" : dimList[0];
    const groups = new Map();
    for (const e of items) {
      const scenario = SCENARIOS.get(e.scen);
      if (e.reward === null || !scenario || !scenario.difficulty || typeof scenario.difficulty[dim] !== "number")
        continue;
      const g = groups.get(scenario.difficulty[dim]) || { n: 0, solved: 0, scenarios: new Set() };
      g.n += 1;
      g.solved += e.solved ? 1 : 0;
      g.scenarios.add(e.scen);
      groups.set(scenario.difficulty[dim], g);
    }
    const levels = [...groups.keys()].sort((a, b) => a - b);
    const picker = h(
      "select",
      {
        name: "level",
        onchange: () => {
          params.set("level", picker.value);
          redraw();
        },
      },
      dimList.map((d) => h("option", { value: d, selected: d === dim }, d)),
    );
    const bars = levels.map((level) => {
      const g = groups.get(level);
      return {
        label: String(level),
        note: `${g.solved}/${g.n}`,
        segments: [
          {
            value: g.solved / g.n,
            title: `${dim} = ${level}: ${g.solved} of ${g.n} episodes solved (${g.scenarios.size} scenarios)`,
          },
        ],
      };
    });
    const body = levels.length
      ? barChart({ bars, yMax: 1, yFormat: (v) => fmt(v, 2), xTitle: `difficulty: ${dim}`, yTitle: "episodes solved" })
      : h("p", { class: "muted" }, "No scored episode of a scenario with a difficulty.");
    return chartBox(
      "chart-difficulty",
      "Pass rate by difficulty level",
      [h("label", { class: "muted" }, "level by ", picker), body],
      "Share of scored episodes solved, per level of the scenario's difficulty; the label is solved/episodes.",
    );
  }

  function toolChart(items) {
    const perTool = new Map();
    for (const e of items)
      for (const [tool, [calls, errors]] of Object.entries(e.tools)) {
        const t = perTool.get(tool) || [0, 0];
        t[0] += calls;
        t[1] += errors;
        perTool.set(tool, t);
      }
    const top = [...perTool.entries()].sort((a, b) => b[1][0] - a[1][0]).slice(0, 24);
    if (!top.length) return chartBox("chart-tools", "Tool calls", h("p", { class: "muted" }, "No tool call."));
    const bars = top.map(([tool, [calls, errors]]) => ({
      label: tool,
      note: fmt(calls),
      segments: [
        { value: calls - errors, cls: "ok", title: `${tool}: ${calls - errors} succeeded` },
        { value: errors, cls: "bad", title: `${tool}: ${errors} failed` },
      ],
    }));
    return chartBox(
      "chart-tools",
      "Tool calls",
      barChart({
        bars,
        whole: true,
        yTitle: "calls",
        legend: [
          ["succeeded", "ok"],
          ["failed", "bad"],
        ],
      }),
      perTool.size > top.length ? `The ${top.length} most called of ${perTool.size} tools.` : null,
    );
  }

  function errorChart(items) {
    const types = new Map();
    for (const e of items)
      for (const [type, n] of Object.entries(e.error_types)) types.set(type, (types.get(type) || 0) + n);
    const calls = items.reduce((a, e) => a + e.calls, 0);
    const bars = [...types.entries()]
      .sort((a, b) => b[1] - a[1])
      .map(([type, n]) => ({ label: type, segments: [{ value: n, cls: "bad", title: `${type}: ${n}` }] }));
    if (!bars.length)
      return chartBox(
        "chart-errors",
        "Tool errors by type",
        h("p", { class: "muted" }, `No failed call among ${count(calls, "call")}.`),
      );
    const failed = bars.reduce((a, b) => a + b.segments[0].value, 0);
    return chartBox(
      "chart-errors",
      "Tool errors by type",
      barChart({ bars, whole: true, yTitle: "failed calls" }),
      `${fmt(failed)} of ${count(calls, "call")} failed (${pct(failed / Math.max(1, calls))}).`,
    );
  }

  function callsPerEpisodeChart(items) {
    const counts = tally(items.map((e) => e.calls))
      .map(([n, c]) => [Number(n), c])
      .sort((a, b) => a[0] - b[0]);
    const bars = counts.map(([n, c]) => ({
      label: String(n),
      segments: [{ value: c, title: `${c} episodes with ${n} calls` }],
    }));
    return chartBox(
      "chart-calls",
      "Tool calls per episode",
      bars.length
        ? barChart({ bars, whole: true, xTitle: "calls in the episode", yTitle: "episodes" })
        : h("p", { class: "muted" }, "No episode."),
    );
  }

  function terminationChart(items) {
    const bars = tally(items.map((e) => e.term)).map(([term, n]) => ({
      label: term,
      segments: [{ value: n, title: `${term}: ${n}` }],
    }));
    return chartBox(
      "chart-terminations",
      "How episodes ended",
      bars.length ? barChart({ bars, whole: true, yTitle: "episodes" }) : h("p", { class: "muted" }, "No episode."),
    );
  }

  function arenaChart() {
    const arena = INDEX.arena;
    if (!arena || !Array.isArray(arena.rounds) || !arena.rounds.length) return null;
    const series = arena.rounds.map((r, i) => ({
      name: `round ${r.round !== undefined ? r.round : i + 1}${chosenLevel(r) !== null ? ` (chose ${chosenLevel(r)})` : ""}`,
      points: (r.levels || []).map((l) => [
        l.calls,
        l.pass_rate,
        `${l.episodes !== undefined ? l.episodes : "?"} episodes, ${l.scenarios !== undefined ? l.scenarios : "?"} scenarios`,
      ]),
    }));
    const xs = [...new Set(series.flatMap((line) => line.points.map((p) => p[0])))]
      .filter((v) => typeof v === "number")
      .sort((a, b) => a - b);
    if (!xs.length)
      return chartBox(
        "chart-arena",
        "Arena: pass rate per level, each round",
        h("p", { class: "muted" }, "The arena report has no levels."),
      );
    return chartBox(
      "chart-arena",
      "Arena: pass rate per level, each round",
      lineChart({
        series,
        xs,
        xTitle: "difficulty level (state-changing calls)",
        yTitle: "pass rate",
        band: Array.isArray(arena.band) ? arena.band : null,
        target: arena.target_pass,
      }),
      "From arena_report.json; the shaded band is the curriculum's pass-rate band, the dashed line its target.",
    );
  }

  function failingChecks(items) {
    const perCheck = new Map();
    for (const e of items) {
      [...e.checks].forEach((status, i) => {
        const key = `${e.scen}\u0000${i}`;
        const c = perCheck.get(key) || { scen: e.scen, i, n: 0, f: 0, err: 0 };
        c.n += 1;
        if (status === "f") c.f += 1;
        if (status === "e") c.err += 1;
        perCheck.set(key, c);
      });
    }
    const rows = [...perCheck.values()]
      .filter((c) => c.f + c.err > 0)
      .sort((a, b) => b.f + b.err - (a.f + a.err) || (b.f + b.err) / b.n - (a.f + a.err) / a.n)
      .slice(0, 15);
    const body = rows.length
      ? table(
          ["scenario", "check", "episodes", "false", "error", "fail rate"],
          rows.map((c) => [
            h("a", { href: hash("scenario", c.scen) }, c.scen),
            (INDEX.check_items[c.scen] || [])[c.i] || `check ${c.i + 1}`,
            c.n,
            c.f,
            c.err,
            pct((c.f + c.err) / c.n),
          ]),
          [2, 3, 4, 5],
        )
      : h("p", { class: "muted" }, "No check failed.");
    return h("section", { class: "chart", id: "failing-checks" }, h("h3", {}, "Checks that fail most often"), body);
  }

  function drawCharts(params, grid, redraw) {
    const items = filtered(params);
    fill(
      grid,
      h(
        "div",
        { class: "summary-line", id: "chart-count" },
        `Over ${count(items.length, "episode")} of ${EPISODES.length.toLocaleString("en")} · `,
        h("a", { href: hash("episodes", null, filterQuery(params)) }, "list them"),
      ),
      h(
        "div",
        { class: "charts" },
        rewardChart(items),
        passkChart(items),
        difficultyChart(items, params, redraw),
        arenaChart(),
        toolChart(items),
        errorChart(items),
        callsPerEpisodeChart(items),
        terminationChart(items),
      ),
      failingChecks(items),
    );
  }

  // ------------------------------------------------------------------ pages: scenarios
  function measured(scenarioId) {
    const episodes = EPISODES.filter((e) => e.scen === scenarioId && e.reward !== null);
    return { n: episodes.length, solved: episodes.filter((e) => e.solved).length };
  }

  function difficultyText(d) {
    if (!d) return "–";
    return Object.entries(d)
      .filter(([, v]) => typeof v === "number" && Number.isInteger(v))
      .map(([k, v]) => `${k} ${v}`)
      .join(" · ");
  }

  function proofText(p) {
    if (!p) return "–";
    const mutants = p.mutants.length
      ? `mutants ≤ ${fmt(Math.max(...p.mutants), 2)} (${p.mutants.length})`
      : "no mutants";
    return `${p.proven ? "proven" : "not proven"} · reference ${fmt(p.reference, 2)} · null ${fmt(p.null, 2)} · ${mutants}`;
  }

  function scenariosPage(route) {
    const stats = new Map();
    for (const e of EPISODES) {
      if (e.reward === null) continue;
      const st = stats.get(e.scen) || { n: 0, solved: 0 };
      st.n += 1;
      st.solved += e.solved ? 1 : 0;
      stats.set(e.scen, st);
    }
    const rate = (sc) => {
      const st = stats.get(sc.id);
      return st ? st.solved / st.n : null;
    };
    const columns = [
      { key: "id", label: "scenario", width: "minmax(140px, 1.6fr)", sort: (sc) => sc.id, cell: (sc) => sc.id },
      { key: "env", label: "environment", width: "minmax(80px, 1fr)", sort: (sc) => sc.env, cell: (sc) => sc.env },
      {
        key: "status",
        label: "status",
        width: "70px",
        sort: (sc) => sc.status,
        cell: (sc) =>
          h("span", { class: sc.status === "proven" ? "ok" : sc.status === "dropped" ? "bad" : null }, sc.status),
      },
      {
        key: "difficulty",
        label: "difficulty",
        width: "minmax(90px, 1.2fr)",
        sort: (sc) => (sc.difficulty ? sc.difficulty.calls : null),
        cell: (sc) => difficultyText(sc.difficulty),
      },
      {
        key: "generated",
        label: "measured before",
        width: "110px",
        num: true,
        sort: (sc) => (sc.measured ? sc.measured.pass_rate : null),
        cell: (sc) => (sc.measured ? `${fmt(sc.measured.pass_rate, 2)} (${sc.measured.samples})` : "–"),
        title: (sc) => (sc.measured ? measuredText(sc.measured) : "no pass rate recorded with the scenario"),
      },
      {
        key: "measured",
        label: "pass rate here",
        width: "100px",
        num: true,
        sort: rate,
        cell: (sc) => {
          const st = stats.get(sc.id);
          return st ? `${st.solved}/${st.n} (${pct(st.solved / st.n)})` : "–";
        },
      },
      {
        key: "task",
        label: "task",
        width: "minmax(200px, 4fr)",
        sort: (sc) => sc.task,
        cell: (sc) => sc.task,
        title: (sc) => sc.task,
      },
    ];
    const params = route.params;
    const sortState = { key: params.get("sort") || "", desc: params.get("desc") === "1" };
    const query = (params.get("q") || "").toLowerCase();
    const found = INDEX.scenarios.filter(
      (sc) => !query || `${sc.id}\n${sc.env}\n${sc.task}`.toLowerCase().includes(query),
    );
    const items = sortItems(found, columns, sortState);
    const onSort = (key) => {
      if (params.get("sort") === key) params.set("desc", params.get("desc") === "1" ? "0" : "1");
      else {
        params.set("sort", key);
        params.set("desc", "0");
      }
      location.hash = hash("scenarios", null, params);
    };
    const search = h("input", {
      type: "search",
      name: "q",
      value: params.get("q") || "",
      onchange: () => {
        if (search.value) params.set("q", search.value);
        else params.delete("q");
        location.hash = hash("scenarios", null, params);
      },
    });
    const list = virtualList(items, columns, (sc) => hash("scenario", sc.id, params), sortState, onSort);
    const byStatus = tally(INDEX.scenarios.map((sc) => sc.status))
      .map(([st, n]) => `${n.toLocaleString("en")} ${st}`)
      .join(", ");
    show(
      h("h1", {}, "Scenarios"),
      h("div", { class: "filters" }, h("label", {}, "id, environment or task contains", search)),
      h(
        "p",
        { class: "summary-line", id: "scenario-count" },
        `${count(items.length, "scenario")} of ${INDEX.scenarios.length.toLocaleString("en")}${byStatus ? ` (${byStatus})` : ""}. "Pass rate here" counts the scored episodes of this run.`,
      ),
    );
    if (!INDEX.scenarios.length) {
      show(h("p", { class: "muted" }, "No scenarios were read (see Problems)."));
      return;
    }
    if (!items.length) {
      show(h("p", { class: "muted" }, "No scenario matches."));
      return;
    }
    show(list.el);
    list.draw();
  }

  async function scenarioPage(route, token) {
    const sc = SCENARIOS.get(route.arg);
    if (!sc) {
      show(h("h1", {}, "Scenario not found"), h("p", {}, `No scenario ${route.arg} was read.`));
      return;
    }
    const st = measured(sc.id);
    const modes = tally(EPISODES.filter((e) => e.scen === sc.id && e.reward !== null).map((e) => e.mode));
    const body = h("div", {}, h("p", { class: "muted" }, "Loading…"));
    show(
      h("div", { class: "nav-row" }, h("a", { href: hash("scenarios", null, route.params) }, "← scenarios")),
      h("h1", {}, sc.id),
      kv([
        ["environment", ENVS.has(sc.env) ? h("a", { href: hash("env", sc.env) }, sc.env) : sc.env],
        ["status", sc.status],
        ["difficulty", difficultyText(sc.difficulty)],
        ["proof", proofText(sc.proof)],
        ["pass rate measured before", sc.measured ? measuredText(sc.measured) : "–"],
        [
          "pass rate here",
          st.n
            ? [
                `${st.solved} of ${st.n} (${pct(st.solved / st.n)})`,
                modes.length > 1 ? ` · ${modes.map(([m, n]) => `${m} ${n}`).join(", ")}` : "",
                " · ",
                h("a", { href: hash("episodes", null, new URLSearchParams({ scen: sc.id })) }, "its episodes"),
              ]
            : "no scored episode",
        ],
        ["read from", h("span", { class: "mono" }, sc.where)],
      ]),
      h("h2", {}, "Task"),
      h("div", { class: "msg user" }, h("div", { class: "text" }, sc.task || "–")),
      body,
    );
    let d;
    try {
      d = await record("s", sc.k);
    } catch (err) {
      if (token === renderToken) fill(body, h("p", { class: "bad" }, `Could not load the scenario: ${err.message}`));
      return;
    }
    if (token !== renderToken) return;
    const v = d.validation;
    fill(
      body,
      h("h2", {}, "Checklist"),
      h(
        "ul",
        { class: "checks" },
        d.checklist.map((c) => h("li", {}, c.item, fold("checker code", pre(c.code)))),
      ),
      h("h2", {}, "Reference solution"),
      d.reference_solution.length
        ? h(
            "ol",
            {},
            d.reference_solution.map((c) => h("li", { class: "mono" }, `${c.name}(${JSON.stringify(c.arguments)})`)),
          )
        : h("p", { class: "muted" }, "none"),
      h("h2", {}, "Proof"),
      v
        ? [
            kv([
              ["proven", v.proven ? "yes" : "no"],
              ["reference reward", fmt(v.reference_reward)],
              ["null agent reward", fmt(v.null_reward)],
              ["mutant rewards", v.mutant_rewards.length ? v.mutant_rewards.map((r) => fmt(r, 2)).join(", ") : "–"],
              v.collateral ? ["collateral probe", collateralText(v.collateral)] : null,
              d.collateral_gate ? ["collateral gate", gateText(d.collateral_gate)] : null,
              ["reasons", v.reasons.length ? v.reasons.join("; ") : "–"],
            ]),
            v.mutants.length ? fold(`${count(v.mutants.length, "mutant")}`, pre(v.mutants)) : null,
          ]
        : h("p", { class: "muted" }, "No validation recorded."),
      d.lookups.length
        ? [
            h("h2", {}, "Ids the request leaves out"),
            table(
              ["record", "named by", "query tool"],
              d.lookups.map((l) => [`${l.container}/${l.key}`, `${l.field} = ${l.value}`, l.tool]),
            ),
          ]
        : null,
      bulletSection("Rules the initial state breaks", d.state_warnings),
      bulletSection("Notes on earlier task drafts", d.task_notes),
      h("h2", {}, "Initial state"),
      fold("init_config", pre(d.init_config)),
    );
  }

  function measuredText(m) {
    const agent = m.agent ? ` of ${m.agent}` : "";
    const errors = m.errors ? `, ${count(m.errors, "endpoint failure")}` : "";
    return `${fmt(m.pass_rate, 2)} over ${count(m.samples, "episode")}${agent}${errors}`;
  }

  const CAUGHT_BY = {
    checklist: "a checker catches it",
    gate: "only the collateral gate catches it",
    none: "nothing catches it: the reward ignores the change",
  };

  /** The proof's collateral probe: the reference plus one extra change elsewhere, and what keeps it below 1. */
  function collateralText(probe) {
    if (!probe.call) return probe.note || "no call changes anything outside what the reference changes";
    return [
      `${probe.call.name}(${JSON.stringify(probe.call.arguments)}) also changes ${probe.paths.join(", ") || "–"}`,
      `reward ${fmt(probe.reward, 2)} (checklist ${fmt(probe.checklist, 2)})`,
      CAUGHT_BY[probe.caught_by] || probe.caught_by || "–",
      probe.note,
    ]
      .filter((part) => part)
      .join(" · ");
  }

  function gateText(gate) {
    const added = Object.entries(gate.new_records).map(([container, n]) => `${n} new in ${container}`);
    return `changes allowed: ${[...gate.paths, ...added].join(", ") || "none"}; anything else multiplies the checklist share by ${fmt(gate.factor, 2)}`;
  }

  // ------------------------------------------------------------------ pages: environments
  function envsPage() {
    show(h("h1", {}, "Environments"));
    if (!INDEX.envs.length) {
      show(h("p", { class: "muted" }, "No environments were read (see Problems)."));
      return;
    }
    const scenarioCount = tally(INDEX.scenarios.map((sc) => sc.env));
    const episodeCount = tally(EPISODES.map((e) => e.env));
    const n = (pairs, id) => (pairs.find((p) => p[0] === id) || [id, 0])[1];
    show(
      table(
        ["environment", "class", "status", "tools", "inspection", "scenarios", "episodes", "summary"],
        INDEX.envs.map((env) => [
          h("a", { href: hash("env", env.id) }, env.id),
          env.class,
          h("span", { class: env.status === "accepted" ? "ok" : env.status === "rejected" ? "bad" : null }, env.status),
          env.tools,
          inspectionText(env.inspection),
          n(scenarioCount, env.id),
          n(episodeCount, env.id),
          env.summary,
        ]),
        [3, 5, 6],
      ),
    );
  }

  function inspectionText(ins) {
    if (!ins) return "–";
    return `${fmt(ins.score, 2)} (threshold ${fmt(ins.threshold, 2)}): ${ins.pass} pass, ${ins.warning} warning, ${ins.fail} fail over ${ins.rounds} rounds`;
  }

  async function envPage(route, token) {
    const env = ENVS.get(route.arg);
    if (!env) {
      show(h("h1", {}, "Environment not found"), h("p", {}, `No environment ${route.arg} was read.`));
      return;
    }
    const body = h("div", {}, h("p", { class: "muted" }, "Loading…"));
    show(
      h("div", { class: "nav-row" }, h("a", { href: "#/envs" }, "← environments")),
      h("h1", {}, env.id),
      kv([
        ["class", env.class],
        ["status", env.status],
        ["inspection", inspectionText(env.inspection)],
        env.inspection && env.inspection.reason ? ["reason", env.inspection.reason] : null,
        ["read from", h("span", { class: "mono" }, env.where)],
        [
          "scenarios",
          h("a", { href: "#/scenarios" }, String(INDEX.scenarios.filter((sc) => sc.env === env.id).length)),
        ],
        [
          "episodes",
          h(
            "a",
            { href: hash("episodes", null, new URLSearchParams({ env: env.id })) },
            String(EPISODES.filter((e) => e.env === env.id).length),
          ),
        ],
      ]),
      body,
    );
    let d;
    try {
      d = await record("v", env.k);
    } catch (err) {
      if (token === renderToken) fill(body, h("p", { class: "bad" }, `Could not load the environment: ${err.message}`));
      return;
    }
    if (token !== renderToken) return;
    const toolName = (t) => (t.function ? t.function.name : t.name) || "?";
    const toolSpec = (t) => t.function || t;
    fill(
      body,
      d.introduction
        ? [h("h2", {}, "Introduction"), h("div", { class: "msg system" }, h("div", { class: "text" }, d.introduction))]
        : null,
      h("h2", {}, `Tools (${d.tools.length})`),
      h(
        "p",
        { class: "muted" },
        `Schemas as ${d.tools_from === "environment record" ? "recorded with the environment" : "offered to the agent in its episodes"}.`,
      ),
      table(
        ["tool", "description", "inspection verdicts", "parameters"],
        d.tools.map((t) => [
          h("span", { class: "mono" }, toolName(t)),
          toolSpec(t).description || "",
          Object.entries(d.verdicts[toolName(t)] || {}).map(([verdict, n]) =>
            h(
              "span",
              { class: `pill ${verdict === "Pass" ? "ok" : verdict === "Fail" ? "bad" : "warn"}` },
              `${verdict} ${n}`,
            ),
          ),
          fold("schema", pre(toolSpec(t).parameters || {})),
        ]),
      ),
      Object.keys(d.dropped).length
        ? [
            h("h2", {}, "Tools dropped at inspection"),
            table(
              ["tool", "why"],
              Object.entries(d.dropped).map(([tool, why]) => [tool, why.join(" · ") || "–"]),
            ),
          ]
        : null,
      bulletSection("Rules", d.rules),
      h("h2", {}, "Code"),
      fold("environment class", pre(d.code)),
    );
  }

  // ------------------------------------------------------------------ pages: run and problems
  function runPage() {
    const scored = EPISODES.filter((e) => e.reward !== null);
    const solved = scored.filter((e) => e.solved).length;
    const envStatus = tally(INDEX.envs.map((e) => e.status))
      .map(([st, n]) => `${n.toLocaleString("en")} ${st}`)
      .join(", ");
    const scenStatus = tally(INDEX.scenarios.map((sc) => sc.status))
      .map(([st, n]) => `${n.toLocaleString("en")} ${st}`)
      .join(", ");
    show(
      h("h1", {}, INDEX.title),
      kv([
        ["folder", h("span", { class: "mono" }, INDEX.root)],
        ["kind", `${INDEX.layout} folder`],
        ["read at", INDEX.generated],
      ]),
      h(
        "div",
        { class: "cards" },
        card("environments", INDEX.envs.length, envStatus),
        card("scenarios", INDEX.scenarios.length, scenStatus),
        card(
          "episodes",
          EPISODES.length.toLocaleString("en"),
          scored.length < EPISODES.length ? `${EPISODES.length - scored.length} without a reward` : null,
        ),
        card("solved", scored.length ? pct(solved / scored.length) : "–", `${solved} of ${scored.length}`),
        card("mean reward", fmt(mean(scored.map((e) => e.reward)))),
        card(
          "problems",
          INDEX.problems.length,
          INDEX.problems.length ? h("a", { href: "#/problems" }, "see them") : "none",
        ),
      ),
    );
    const sources = tally(EPISODES.map((e) => e.src));
    const sides = EPISODES.some((e) => e.collateral > 0)
      ? tally(
          EPISODES.map((e) => (e.collateral > 0 ? "changed outside the reference" : "only what the reference changes")),
        )
      : [];
    if (sources.length) {
      show(
        h("h2", {}, "Rollouts"),
        table(
          ["folder", "episodes", "modes", "solved", "mean reward", "pass^1"],
          sources.map(([src]) => {
            const items = EPISODES.filter((e) => e.src === src);
            const sc = items.filter((e) => e.reward !== null);
            const p1 = passHatK(items)[0];
            return [
              h("a", { href: hash("episodes", null, new URLSearchParams({ src })) }, src || "(this folder)"),
              items.length,
              [...new Set(items.map((e) => `${e.mode}/${e.agent_mode}`))].join(", "),
              `${sc.filter((e) => e.solved).length} of ${sc.length}`,
              fmt(mean(sc.map((e) => e.reward))),
              p1 ? fmt(p1[1]) : "–",
            ];
          }),
          [1, 4, 5],
        ),
      );
    }
    if (INDEX.arena) show(arenaSummary(INDEX.arena));
    for (const [where, manifest] of Object.entries(INDEX.manifests)) show(manifestSection(where, manifest));
    if (!Object.keys(INDEX.manifests).length)
      show(h("p", { class: "muted" }, "No manifest.json here: configs, models and LLM usage are not shown."));
  }

  /** The level (state-changing calls) a round chose for the next, or null (none chosen, or the last round of a stopped arena). */
  function chosenLevel(round) {
    return round.chosen && typeof round.chosen.calls === "number" ? round.chosen.calls : null;
  }

  function arenaSummary(arena) {
    const rounds = Array.isArray(arena.rounds) ? arena.rounds : [];
    const curriculum = arena.curriculum || {};
    return [
      h("h2", {}, INDEX.arena_folder ? `Arena (${INDEX.arena_folder}/)` : "Arena"),
      kv([
        arena.agent ? ["agent", arena.agent] : null,
        ["target pass rate", fmt(arena.target_pass)],
        ["band", Array.isArray(arena.band) ? arena.band.join(" – ") : "–"],
        [
          "rounds",
          `${rounds.length}${arena.complete === false ? " (stopped before the last: run it again to resume)" : ""}`,
        ],
        ["chosen levels", rounds.map((r) => (chosenLevel(r) === null ? "–" : chosenLevel(r))).join(" → ") || "–"],
        [
          "curriculum",
          curriculum.scenarios !== undefined
            ? `${curriculum.scenarios} of ${curriculum.measured !== undefined ? curriculum.measured : "?"} measured scenarios in the band`
            : "–",
        ],
        curriculum.never_solved !== undefined
          ? ["outside the band", `never solved ${curriculum.never_solved}, always solved ${curriculum.always_solved}`]
          : null,
      ]),
      h("p", {}, h("a", { href: "#/charts" }, "the per-round curve is among the charts")),
    ];
  }

  function manifestSection(where, manifest) {
    const stages = manifest.stages || {};
    const rows = Object.entries(stages).map(([name, st]) => {
      const u = st.llm_total || {};
      return [
        name,
        Object.entries(st.llm_models || {})
          .map(([role, model]) => `${role}: ${model}`)
          .join(", ") || "–",
        Object.entries(st.counts || {})
          .filter(([, v]) => typeof v !== "object")
          .map(([k, v]) => `${k} ${fmt(v)}`)
          .join(" · "),
        fmt(u.calls || 0),
        fmt(u.cache_hits || 0),
        fmt(u.prompt_tokens || 0),
        fmt(u.completion_tokens || 0),
        fmt(u.errors || 0),
        fmt(st.wall_s, 1),
        st.finished_at || "–",
      ];
    });
    const pipeline = manifest.pipeline;
    return [
      h("h2", {}, where === "." ? "Manifest" : `Manifest of ${where}`),
      pipeline
        ? kv(Object.entries(pipeline).map(([k, v]) => [k, typeof v === "object" ? JSON.stringify(v) : String(v)]))
        : null,
      rows.length
        ? table(
            [
              "stage",
              "models",
              "counts",
              "LLM calls",
              "cache hits",
              "prompt tokens",
              "completion tokens",
              "errors",
              "wall s",
              "finished",
            ],
            rows,
            [3, 4, 5, 6, 7, 8],
          )
        : null,
      Object.entries(stages).map(([name, st]) =>
        fold(`${name}: config and seeds`, pre({ config: st.config, llm_seeds: st.llm_seeds, sandbox: st.sandbox })),
      ),
      manifest.versions ? fold("package versions", pre(manifest.versions)) : null,
    ];
  }

  function problemsPage() {
    show(h("h1", {}, "Problems"));
    if (!INDEX.problems.length) {
      show(h("p", {}, "Every file here was read in full."));
      return;
    }
    show(
      h("p", {}, "What could not be read or shown; everything else was read."),
      table(
        ["kind", "where", "what"],
        INDEX.problems.map((p) => [
          h("span", { class: "pill bad" }, p.kind.replace(/_/g, " ")),
          h("span", { class: "mono" }, p.where),
          p.message,
        ]),
      ),
    );
  }

  function banner() {
    const el = document.getElementById("banner");
    const problems = INDEX.problems;
    if (!problems.length) return;
    const kinds = tally(problems.map((p) => p.kind.replace(/_/g, " ")))
      .map(([k, n]) => `${n} ${k}`)
      .join(", ");
    el.hidden = false;
    el.append(
      h("strong", {}, `${count(problems.length, "problem")} reading this run`),
      ` (${kinds}); the rest was read. `,
      h("a", { href: "#/problems" }, "all problems"),
      h(
        "ul",
        {},
        problems.slice(0, 3).map((p) => h("li", {}, h("span", { class: "mono" }, p.where), `: ${p.message}`)),
      ),
    );
  }

  // ------------------------------------------------------------------ routing
  const PAGES = {
    run: ["Run", runPage],
    envs: ["Environments", envsPage],
    scenarios: ["Scenarios", scenariosPage],
    episodes: ["Episodes", filteredPage("episodes", "Episodes", drawEpisodes)],
    charts: ["Charts", filteredPage("charts", "Charts", drawCharts)],
    problems: ["Problems", problemsPage],
  };
  const DETAIL = { episode: [episodePage, "episodes"], scenario: [scenarioPage, "scenarios"], env: [envPage, "envs"] };

  function route() {
    const raw = location.hash.replace(/^#\/?/, "");
    const at = raw.indexOf("?");
    const path = at >= 0 ? raw.slice(0, at) : raw;
    const [page, ...rest] = path.split("/");
    return {
      page: page || "run",
      arg: decodeURIComponent(rest.join("/")),
      params: new URLSearchParams(at >= 0 ? raw.slice(at + 1) : ""),
    };
  }

  function tabs(active) {
    const counts = {
      envs: INDEX.envs.length,
      scenarios: INDEX.scenarios.length,
      episodes: EPISODES.length,
      problems: INDEX.problems.length,
    };
    document.getElementById("tabs").replaceChildren(
      ...Object.entries(PAGES).map(([name, [label]]) =>
        h(
          "a",
          {
            href: `#/${name}`,
            class: [name === active ? "active" : "", name === "problems" && counts.problems ? "has-problems" : ""].join(
              " ",
            ),
            id: `tab-${name}`,
          },
          label,
          counts[name] !== undefined ? ` (${counts[name].toLocaleString("en")})` : "",
        ),
      ),
    );
  }

  function render() {
    const token = ++renderToken;
    const r = route();
    view.replaceChildren();
    try {
      if (DETAIL[r.page]) {
        tabs(DETAIL[r.page][1]);
        DETAIL[r.page][0](r, token).catch((err) => show(h("p", { class: "bad" }, `This page failed: ${err.message}`)));
      } else {
        const page = PAGES[r.page] ? r.page : "run";
        tabs(page);
        PAGES[page][1](r);
      }
    } catch (err) {
      show(h("p", { class: "bad" }, `This page failed: ${err.message}`));
    }
    window.scrollTo(0, 0);
  }

  document.getElementById("run-title").textContent = `· ${INDEX.title}`;
  banner();
  window.addEventListener("hashchange", render);
  render();
  window.esFirstRender = performance.now();
})();
