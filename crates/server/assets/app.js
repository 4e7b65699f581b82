"use strict";
// The Kōnane web board. Everything about the rules (legal moves, whose turn,
// the result) comes from the server's JSON API (docs/api.md); this file only
// draws the game it is given and turns clicks into API requests.

const DEFAULT_SIMS = 400;     // the network's default per move (docs/api.md)
const DEFAULT_MS = 1000;      // alpha-beta's default per move
const HINT_SIMS = 400;        // a hint should come back quickly
const LIVE_SIMS = 20000;      // live analysis runs until this or the server's max

const ENGINE_NAMES = {
  network: "the network",
  alphabeta: "alpha-beta",
  greedy: "the greedy player",
  random: "the random player",
};

// All the page's state in one place; render() draws from it.
const state = {
  limits: { max_sims: 100000, max_ms: 30000 },
  game: null,          // the game JSON as the API last returned it
  board: null,         // the parsed position: {cols, rows, stones: Map(cell -> colour|null)}
  legal: null,         // the legal moves indexed: {removals, jumps: Map(from -> [to]), opening}
  cells: new Map(),    // cell name -> its <button>
  boardKey: "",        // "COLSxROWS" of the buttons currently built
  focusCell: null,     // the cell that takes the board's Tab stop
  selected: null,      // the stone chosen to jump with
  hint: null,          // {position, move}: shown only while the position is unchanged
  analysis: null,      // the latest analysis object (hint, live or the engine's)
  analysisPly: 0,      // the ply (moves played) of the position it analysed
  busy: null,          // "create" | "move" | "engine" | "undo" | "hint" while a request runs
  pending: null,       // the promise of that request
  abort: null,         // aborts an engine search (the server stops when we hang up)
  stream: null,        // the EventSource of the live analysis
  streamClosedAt: -Infinity,
};

const $ = (id) => document.getElementById(id);
const cap = (s) => s.charAt(0).toUpperCase() + s.slice(1);
const other = (colour) => (colour === "black" ? "white" : "black");
const pct = (p) => `${Math.round(p * 100)}%`;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function clampInt(value, lo, hi, fallback) {
  const n = Math.round(Number(value));
  if (value === "" || !Number.isFinite(n)) return fallback;
  return Math.min(hi, Math.max(lo, n));
}

function listWords(items) {
  if (items.length <= 1) return items.join("");
  return `${items.slice(0, -1).join(", ")} or ${items[items.length - 1]}`;
}

// ---------------------------------------------------------------- the API

class ApiError extends Error {}

// One request; a 4xx/5xx answer throws its {"error"} text so callers can show it.
async function api(method, path, body, { signal, retry409 = false } = {}) {
  for (let attempt = 0; ; attempt++) {
    let res;
    try {
      res = await fetch(path, {
        method,
        headers: body === undefined ? {} : { "Content-Type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal,
      });
    } catch (err) {
      if (err.name === "AbortError") throw err;
      throw new ApiError("The server did not answer. Is konane serve still running?");
    }
    // A live analysis we just hung up on may hold the game for a moment longer.
    if (res.status === 409 && retry409 && attempt < 4) {
      await sleep(250);
      continue;
    }
    if (res.status === 204) return null;
    const text = await res.text();
    if (!res.ok) {
      let message = "";
      try {
        message = JSON.parse(text).error;
      } catch (_) {
        // not JSON: fall back to the status line
      }
      throw new ApiError(message || `The server answered ${res.status} ${res.statusText}`.trim());
    }
    const type = res.headers.get("Content-Type") || "";
    return type.includes("json") ? JSON.parse(text) : text;
  }
}

// True shortly after a live analysis was closed (see the retry above).
const searchMayLinger = () => performance.now() - state.streamClosedAt < 3000;

// Runs one request at a time, marks the page busy meanwhile and never leaves
// it busy: errors end up in #message. Resolves to true when fn succeeded.
async function run(kind, fn) {
  if (state.busy) return false;
  state.busy = kind;
  render();
  let ok = false;
  const done = (async () => {
    try {
      await fn();
      ok = true;
    } catch (err) {
      if (err.name !== "AbortError") say(err.message, "error");
    } finally {
      state.busy = null;
      state.pending = null;
      render();
    }
  })();
  state.pending = done;
  await done;
  return ok;
}

// Waits for (or cancels, if it is a search) whatever request is running.
async function settle() {
  while (state.busy) {
    if (state.abort) state.abort.abort();
    await state.pending;
  }
}

// ---------------------------------------------------------------- the game

const colLetter = (c) => String.fromCharCode(97 + c);
const cellName = (c, r) => colLetter(c) + r; // c from 0 (a), r from 1 (bottom)

// "WB.W/…/BWBW b": rows from the top, then the side to move.
function parsePosition(text) {
  const [grid, side] = text.trim().split(/\s+/);
  const lines = grid.split("/");
  const rows = lines.length;
  const cols = lines[0].length;
  const stones = new Map();
  lines.forEach((line, i) => {
    const r = rows - i;
    for (let c = 0; c < cols; c++) {
      const ch = line[c];
      stones.set(cellName(c, r), ch === "B" ? "black" : ch === "W" ? "white" : null);
    }
  });
  return { cols, rows, stones, toMove: side === "w" ? "white" : "black" };
}

function indexLegal(legal) {
  const removals = new Set();
  const jumps = new Map();
  for (const move of legal) {
    const dash = move.indexOf("-");
    if (dash < 0) {
      removals.add(move);
      continue;
    }
    const from = move.slice(0, dash);
    if (!jumps.has(from)) jumps.set(from, []);
    jumps.get(from).push(move.slice(dash + 1));
  }
  return { removals, jumps, opening: legal.length > 0 && removals.size === legal.length };
}

// The cells a move touches: [cell] for a removal, [from, to] for a jump.
const moveCells = (move) => (move ? move.split("-") : []);
const landing = (move) => moveCells(move).pop();

const sameGame = (id) => state.game !== null && state.game.id === id;
const engineName = (g) => ENGINE_NAMES[g.opponent.kind] || "the engine";
const engineToMove = (g) =>
  g !== null && !g.over && g.opponent.kind !== "human" && g.to_move !== g.human;

function overText(g) {
  const winner = g.winner || other(g.to_move); // the side to move has no move and lost
  let text = `${cap(winner)} wins: ${other(winner)} has no move`;
  if (g.opponent.kind !== "human") text += winner === g.human ? ". Well played!" : ".";
  return text;
}

function setGame(g) {
  const prev = state.game;
  state.game = g;
  state.board = parsePosition(g.position);
  state.legal = indexLegal(g.legal);
  if (!prev || prev.id !== g.id) {
    state.analysis = null;
    state.hint = null;
  }
  if (!prev || prev.id !== g.id || prev.position !== g.position) state.selected = null;
  const key = `${state.board.cols}x${state.board.rows}`;
  if (key !== state.boardKey) buildBoard(state.board.cols, state.board.rows);
  // The id in the address lets a reload continue the game.
  try {
    history.replaceState(null, "", `#game=${g.id}`);
  } catch (_) {
    // some embedded browsers refuse; a reload then simply starts afresh
  }
}

// The number of plies Undo takes back: against an engine, back to the
// person's turn (their move and the engine's reply); 0 when only the engine
// has moved, as there is nothing of the person's to take back.
function undoPlies(g) {
  if (!g || g.moves.length === 0) return 0;
  if (g.opponent.kind === "human") return 1;
  const lastMover = other(g.to_move);
  if (lastMover === g.human) return 1;
  return g.moves.length >= 2 ? 2 : 0;
}

// ---------------------------------------------------------------- actions

function readSize() {
  const preset = $("size").value;
  if (preset !== "custom") return preset;
  const cols = clampInt($("size-cols").value, 1, 20, 8);
  const rows = clampInt($("size-rows").value, 1, 20, 8);
  $("size-cols").value = cols;
  $("size-rows").value = rows;
  return `${cols}x${rows}`;
}

function readPlayers() {
  const kind = $("opponent").value;
  const opponent = { kind };
  if (kind === "network") {
    opponent.sims = clampStrength();
    if ($("model").value) opponent.model = $("model").value;
  } else if (kind === "alphabeta") {
    opponent.ms = clampStrength();
  }
  return { opponent, human: $("color").value };
}

async function createGame(body, note) {
  stopAnalysis();
  await settle(); // a new game replaces whatever was going on
  const ok = await run("create", async () => {
    const g = await api("POST", "/api/v1/games", body);
    setGame(g);
    say(note(g));
  });
  if (ok) await maybeEngine();
}

function newGame() {
  const size = readSize();
  return createGame({ size, ...readPlayers() }, (g) =>
    g.opponent.kind === "human"
      ? `A new ${g.size} game for two: black begins`
      : `A new ${g.size} game against ${engineName(g)}: you play ${g.human}`,
  );
}

async function uploadRecord(file) {
  let text;
  try {
    text = await file.text();
  } catch (err) {
    say(`Could not read ${file.name}: ${err.message}`, "error");
    return;
  }
  // A record is one line; a file of several games continues the first.
  const lines = text.split(/\r?\n/).map((l) => l.trim()).filter((l) => l !== "");
  if (lines.length === 0) {
    say(`${file.name} is empty`, "error");
    return;
  }
  await createGame({ record: lines[0], ...readPlayers() }, (g) => {
    syncForm(g);
    const more = lines.length > 1 ? ` (the first of ${lines.length} games)` : "";
    return `Loaded ${file.name}${more}: ${g.moves.length} moves on ${g.size}`;
  });
}

// Asks the engine for its move when it is its turn.
async function maybeEngine() {
  const g = state.game;
  if (!engineToMove(g) || state.busy) return;
  const id = g.id;
  const controller = new AbortController();
  state.abort = controller;
  await run("engine", async () => {
    const reply = await api("POST", `/api/v1/games/${id}/genmove`, {}, {
      signal: controller.signal,
      retry409: searchMayLinger(),
    });
    if (!sameGame(id)) return;
    if (reply.analysis) {
      state.analysis = reply.analysis; // of the position before its move
      state.analysisPly = reply.game.moves.length - 1;
    }
    setGame(reply.game);
    say(`${cap(engineName(reply.game))} played ${reply.move}` +
      (reply.game.over ? `. ${overText(reply.game)}` : ""));
  });
  if (state.abort === controller) state.abort = null;
}

async function play(move) {
  stopAnalysis();
  const id = state.game.id;
  const mover = state.game.to_move;
  const ok = await run("move", async () => {
    const g = await api("POST", `/api/v1/games/${id}/moves`, { move }, { retry409: searchMayLinger() });
    if (!sameGame(id)) return;
    setGame(g);
    say(`${cap(mover)} played ${move}` + (g.over ? `. ${overText(g)}` : ""));
  });
  if (ok) await maybeEngine();
}

async function undo() {
  const g = state.game;
  const plies = undoPlies(g);
  if (!plies || state.busy) return;
  stopAnalysis();
  const ok = await run("undo", async () => {
    const back = await api("POST", `/api/v1/games/${g.id}/undo`, { plies }, { retry409: searchMayLinger() });
    if (!sameGame(g.id)) return;
    setGame(back);
    say(plies === 2 ? "Took back your move and the reply" : "Took back one move");
  });
  if (ok) await maybeEngine();
}

async function hint() {
  const g = state.game;
  if (!g || g.over || state.busy) return;
  stopAnalysis();
  const sims = Math.min(HINT_SIMS, state.limits.max_sims);
  await run("hint", async () => {
    const a = await api("POST", `/api/v1/games/${g.id}/analysis`, { sims }, { retry409: searchMayLinger() });
    if (!sameGame(g.id)) return;
    state.analysis = a;
    state.analysisPly = g.moves.length;
    const top = a.moves[0];
    if (!top) {
      say("There is no move to hint at");
      return;
    }
    state.hint = { position: a.position, move: top.move };
    say(`Hint: ${top.move} (${a.to_move} wins ${pct((top.value + 1) / 2)} after it)`);
  });
  refreshGame(g.id);
}

// The server may have updated its estimates (the graph) after an analysis.
async function refreshGame(id) {
  if (state.busy || !sameGame(id)) return;
  try {
    const g = await api("GET", `/api/v1/games/${id}`);
    if (sameGame(id) && !state.busy) {
      setGame(g);
      render();
    }
  } catch (_) {
    // only a refresh: the page still shows the last answer
  }
}

function toggleAnalysis() {
  if (state.stream) {
    stopAnalysis();
    say("Analysis stopped");
    render();
    return;
  }
  const g = state.game;
  if (!g || g.over || state.busy) return;
  const sims = Math.min(LIVE_SIMS, state.limits.max_sims);
  const source = new EventSource(`/api/v1/games/${g.id}/analysis?sims=${sims}`);
  state.stream = source;
  source.addEventListener("analysis", (event) => {
    if (state.stream !== source) return;
    let a;
    try {
      a = JSON.parse(event.data);
    } catch (_) {
      return;
    }
    state.analysis = a;
    state.analysisPly = g.moves.length;
    if (a.final) {
      stopAnalysis();
      say(`Analysis done: ${a.simulations.toLocaleString("en")} simulations`);
      refreshGame(g.id);
    }
    render();
  });
  // EventSource cannot read an error body and would reconnect (restarting the
  // search), so any error ends the live analysis.
  source.addEventListener("error", (event) => {
    if (state.stream !== source) return;
    stopAnalysis();
    // The server's own `error` event carries its message; a broken or
    // refused connection carries none.
    let message = "The live analysis stopped: the server refused it or the connection broke";
    try {
      if (event.data) message = JSON.parse(event.data).error || message;
    } catch (_) {
      // not the server's event
    }
    say(message, "error");
    render();
  });
  say(`Analysing up to ${sims.toLocaleString("en")} simulations…`);
  render();
}

// Closes the live analysis; the server stops the search when we hang up.
function stopAnalysis() {
  if (!state.stream) return false;
  state.stream.close();
  state.stream = null;
  state.streamClosedAt = performance.now();
  return true;
}

async function download() {
  const g = state.game;
  if (!g) return;
  try {
    const text = await api("GET", `/api/v1/games/${g.id}/record`);
    const blob = new Blob([text.endsWith("\n") ? text : `${text}\n`], { type: "text/plain" });
    const url = URL.createObjectURL(blob);
    const link = document.createElement("a");
    link.href = url;
    link.download = `konane-${g.size}-${g.id.slice(0, 8)}.txt`;
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
    say(`Saved the record of ${g.moves.length} moves`);
  } catch (err) {
    say(err.message, "error");
  }
}

// ---------------------------------------------------------------- clicks

function onCell(name) {
  setFocusCell(name);
  const g = state.game;
  if (!g) return say("Start a new game first");
  if (state.busy === "engine") return say(`It is ${engineName(g)}'s turn`);
  if (state.busy) return say("One moment…");
  if (g.over) return say(`The game is over: ${g.winner || other(g.to_move)} won`);
  if (engineToMove(g)) {
    // Only reached when its last attempt failed: ask again.
    say(`It is ${engineName(g)}'s turn`);
    maybeEngine();
    return;
  }

  const legal = state.legal;
  const side = g.to_move;
  if (legal.opening) {
    if (legal.removals.has(name)) return play(name);
    return say(side === "black"
      ? "In the opening black removes a stone from a corner or the middle"
      : "White removes a stone next to the hole");
  }

  const sel = state.selected;
  if (sel && name === sel) {
    select(null);
    return say("");
  }
  if (sel && (legal.jumps.get(sel) || []).includes(name)) return play(`${sel}-${name}`);
  if (legal.jumps.has(name)) {
    select(name);
    return say(`${name} can land on ${listWords(legal.jumps.get(name))}`);
  }
  const stone = state.board.stones.get(name);
  if (stone === side) return say(`${name} has no capture`);
  if (sel) return say(`${name} is not a landing cell of ${sel}`);
  if (stone) return say(`${name} is a ${stone} stone: ${side} is to move`);
  return say(`${name} is empty: choose a ${side} stone that can capture`);
}

function select(name) {
  state.selected = name;
  renderBoard();
}

function say(text, kind = "info") {
  const el = $("message");
  el.textContent = text;
  el.classList.toggle("error", kind === "error");
  // Restart the flash so a repeated message still shows it was heard.
  el.classList.remove("flash");
  void el.offsetWidth;
  if (text) el.classList.add("flash");
}

// ---------------------------------------------------------------- the board

function buildBoard(cols, rows) {
  const board = $("board");
  board.replaceChildren();
  board.style.setProperty("--cols", String(cols));
  board.style.setProperty("--rows", String(rows));
  board.setAttribute("aria-label", `Board, ${cols} columns by ${rows} rows`);
  state.cells.clear();
  const coord = (text, kind) => {
    const el = document.createElement("span");
    el.className = `coord ${kind}`;
    el.textContent = text;
    el.setAttribute("aria-hidden", "true");
    return el;
  };
  // Row `rows` first: the grid fills top-down like the position string.
  for (let r = rows; r >= 1; r--) {
    board.append(coord(String(r), "rank"));
    for (let c = 0; c < cols; c++) {
      const name = cellName(c, r);
      const btn = document.createElement("button");
      btn.type = "button";
      btn.className = "cell";
      btn.dataset.cell = name;
      btn.dataset.col = String(c);
      btn.dataset.row = String(r);
      btn.tabIndex = -1;
      board.append(btn);
      state.cells.set(name, btn);
    }
  }
  board.append(coord("", "corner"));
  for (let c = 0; c < cols; c++) board.append(coord(colLetter(c), "file"));
  state.boardKey = `${cols}x${rows}`;
  if (!state.cells.has(state.focusCell)) state.focusCell = cellName(0, rows);
}

// One Tab stop for the whole board (roving tabindex); arrows move within it.
function setFocusCell(name) {
  if (name === state.focusCell || !state.cells.has(name)) return;
  const old = state.cells.get(state.focusCell);
  if (old) old.tabIndex = -1;
  state.focusCell = name;
  state.cells.get(name).tabIndex = 0;
}

const ARROWS = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, 1], ArrowDown: [0, -1] };

function onBoardKey(event) {
  const btn = event.target.closest("button.cell");
  const step = ARROWS[event.key];
  if (!btn || !step || !state.board) return;
  event.preventDefault();
  const c = Math.min(state.board.cols - 1, Math.max(0, Number(btn.dataset.col) + step[0]));
  const r = Math.min(state.board.rows, Math.max(1, Number(btn.dataset.row) + step[1]));
  const name = cellName(c, r);
  setFocusCell(name);
  state.cells.get(name).focus();
}

// The network's prior summed by landing cell (the cell itself for a removal).
function heatByCell() {
  const heat = new Map();
  const a = state.analysis;
  const g = state.game;
  if (!$("heatmap").checked || !a || !g || a.position !== g.position || !a.policy) return heat;
  for (const { move, prior } of a.policy) {
    const cell = landing(move);
    heat.set(cell, (heat.get(cell) || 0) + prior);
  }
  return heat;
}

function renderBoard() {
  const g = state.game;
  const b = state.board;
  if (!g || !b) return;
  const sel = state.selected;
  const targets = new Set(sel ? state.legal.jumps.get(sel) || [] : []);
  const last = new Set(moveCells(g.last_move));
  const hinted = new Set(state.hint && state.hint.position === g.position ? moveCells(state.hint.move) : []);
  const heat = heatByCell();
  const hottest = Math.max(0, ...heat.values());
  const yourTurn = !g.over && !state.busy && !engineToMove(g);

  for (const [name, btn] of state.cells) {
    const stone = b.stones.get(name);
    const movable = yourTurn && (state.legal.removals.has(name) || state.legal.jumps.has(name) || targets.has(name));
    btn.classList.toggle("selected", name === sel);
    btn.classList.toggle("target", targets.has(name));
    btn.classList.toggle("last", last.has(name));
    btn.classList.toggle("hint", hinted.has(name));
    btn.classList.toggle("movable", movable);
    btn.setAttribute("aria-label", `${name} ${stone ? `${stone} stone` : "empty"}`);
    if (name === sel) btn.setAttribute("aria-pressed", "true");
    else btn.removeAttribute("aria-pressed");
    btn.tabIndex = name === state.focusCell ? 0 : -1;

    const parts = [];
    if (stone) {
      const el = document.createElement("span");
      el.className = `stone ${stone}`;
      parts.push(el);
    }
    if (heat.has(name)) {
      const p = heat.get(name);
      const el = document.createElement("span");
      el.className = "heat";
      el.style.setProperty("--heat", String(hottest > 0 ? p / hottest : 0));
      el.textContent = p < 0.005 ? "<1%" : pct(p);
      el.setAttribute("aria-hidden", "true");
      parts.push(el);
    }
    btn.replaceChildren(...parts);
  }
  $("board").setAttribute("aria-busy", String(state.busy === "engine"));
}

// ---------------------------------------------------------------- panels

function renderStatus() {
  const el = $("status");
  const g = state.game;
  el.classList.remove("turn-black", "turn-white", "thinking");
  if (!g) {
    el.textContent = state.busy === "create" ? "Setting up the board…" : "No game yet: choose New game";
    return;
  }
  let text;
  if (g.over) {
    text = overText(g);
    el.classList.add(`turn-${g.winner || other(g.to_move)}`);
  } else {
    el.classList.add(`turn-${g.to_move}`);
    text = `${cap(g.to_move)} to move`;
    if (state.busy === "engine") {
      text += `: ${engineName(g)} is thinking…`;
      el.classList.add("thinking");
    } else if (g.opponent.kind !== "human") {
      text += g.to_move === g.human ? " (you)" : ` (${engineName(g)})`;
    }
  }
  el.textContent = text;
}

function renderMoves() {
  const list = $("moves");
  const moves = state.game ? state.game.moves : [];
  const key = moves.join(" ");
  if (list.dataset.key === key) return; // unchanged: keep the scroll position
  list.dataset.key = key;
  list.replaceChildren(...moves.map((move, i) => {
    const li = document.createElement("li");
    li.textContent = move;
    li.className = i % 2 === 0 ? "by-black" : "by-white"; // black moves first
    if (i === moves.length - 1) li.classList.add("latest");
    return li;
  }));
  list.scrollTop = list.scrollHeight; // the newest move in view
}

function chanceText(p, proven) {
  const tag = proven === true ? " (proven win)" : proven === false ? " (proven loss)" : "";
  return pct(p) + tag;
}

function renderAnalysis() {
  const a = state.analysis;
  const g = state.game;
  const body = $("top-moves").tBodies[0];
  if (!a) {
    $("win-chance").textContent = "No analysis yet: ask for a hint or press Analyse";
    body.replaceChildren();
    $("analysis-info").textContent = "";
    return;
  }
  $("win-chance").textContent = `${cap(a.to_move)} to move: ${chanceText(a.win_chance, a.proven)}`;
  body.replaceChildren(...a.moves.slice(0, 8).map((m) => {
    const tr = document.createElement("tr");
    const cells = [
      [m.move, "move"],
      [pct(m.share), "num"],
      [chanceText((m.value + 1) / 2, m.proven), "num"],
      [(m.pv || []).slice(0, 5).join(" "), "pv"],
    ];
    for (const [text, cls] of cells) {
      const td = document.createElement("td");
      td.textContent = text;
      td.className = cls;
      tr.append(td);
    }
    return tr;
  }));
  const seconds = (a.elapsed_ms / 1000).toFixed(a.elapsed_ms < 10000 ? 1 : 0);
  let info = `${a.simulations.toLocaleString("en")} simulations in ${seconds} s, network ${a.model}`;
  if (!a.final) info += ", running…";
  if (!g || a.position !== g.position) {
    info += ` (the position after ${state.analysisPly} ${state.analysisPly === 1 ? "move" : "moves"}, not the current one)`;
  }
  $("analysis-info").textContent = info;
}

// Black's winning chance by ply, from the game's estimates.
function renderGraph() {
  const svg = $("graph");
  const W = 320, H = 140, L = 34, R = 10, T = 8, B = 22;
  const g = state.game;
  const estimates = g ? g.estimates : [];
  const current = g ? g.moves.length : 0;
  const plies = Math.max(1, estimates.length - 1, current);
  const x = (i) => L + ((W - L - R) * i) / plies;
  const y = (p) => T + (H - T - B) * (1 - p);
  const f = (v) => v.toFixed(1);

  const points = [];
  estimates.forEach((p, i) => {
    if (p !== null && p !== undefined) points.push([x(i), y(p)]);
  });
  const parts = [
    `<rect class="frame" x="${L}" y="${T}" width="${W - L - R}" height="${H - T - B}"/>`,
    `<line class="mid" x1="${L}" x2="${W - R}" y1="${f(y(0.5))}" y2="${f(y(0.5))}"/>`,
    `<text x="${L - 4}" y="${f(y(1) + 4)}" text-anchor="end">100%</text>`,
    `<text x="${L - 4}" y="${f(y(0.5) + 4)}" text-anchor="end">50%</text>`,
    `<text x="${L - 4}" y="${f(y(0) + 4)}" text-anchor="end">0%</text>`,
  ];
  if (points.length >= 2) {
    const line = points.map(([px, py]) => `${f(px)},${f(py)}`).join(" ");
    const first = points[0][0], lastX = points[points.length - 1][0];
    parts.push(`<polygon class="area" points="${f(first)},${f(y(0))} ${line} ${f(lastX)},${f(y(0))}"/>`);
    parts.push(`<polyline class="curve" points="${line}"/>`);
  }
  if (points.length <= 80) {
    for (const [px, py] of points) parts.push(`<circle class="dot" cx="${f(px)}" cy="${f(py)}" r="2.2"/>`);
  }
  if (g) {
    const cx = f(x(current));
    parts.push(`<line class="now" x1="${cx}" x2="${cx}" y1="${T}" y2="${H - B}"/>`);
    const labelX = Math.min(Math.max(x(current), L + 18), W - R - 18);
    parts.push(`<text class="now-label" x="${f(labelX)}" y="${H - 6}" text-anchor="middle">ply ${current}</text>`);
    const p = estimates[current];
    if (p !== null && p !== undefined) {
      parts.push(`<circle class="now-dot" cx="${cx}" cy="${f(y(p))}" r="4"/>`);
    }
  }
  if (points.length === 0) {
    parts.push(`<text class="empty" x="${(L + W - R) / 2}" y="${f(y(0.5) - 8)}" text-anchor="middle">no estimates yet</text>`);
  }
  svg.innerHTML = parts.join("");
  const now = g ? estimates[current] : null;
  svg.setAttribute("aria-label", `Black's winning chance by ply` +
    (now !== null && now !== undefined ? `; now ${pct(now)}` : ""));
}

function renderControls() {
  const g = state.game;
  const busy = state.busy !== null;
  $("undo").disabled = !g || busy || undoPlies(g) === 0;
  $("hint").disabled = !g || busy || g.over;
  $("analyse").disabled = !state.stream && (!g || busy || g.over);
  $("analyse").setAttribute("aria-pressed", String(state.stream !== null));
  $("analyse").textContent = state.stream ? "Stop analysis" : "Analyse";
  $("download").disabled = !g;
}

function render() {
  renderStatus();
  renderBoard();
  renderMoves();
  renderAnalysis();
  renderGraph();
  renderControls();
}

// ---------------------------------------------------------------- the setup form

function strengthMax() {
  return $("opponent").value === "alphabeta" ? state.limits.max_ms : state.limits.max_sims;
}

function clampStrength() {
  const input = $("strength");
  const fallback = $("opponent").value === "alphabeta" ? DEFAULT_MS : DEFAULT_SIMS;
  const value = clampInt(input.value, 1, strengthMax(), Math.min(fallback, strengthMax()));
  input.value = value;
  return value;
}

// Shows the strength (and network) fields only for opponents that use them.
function onOpponentChange() {
  const kind = $("opponent").value;
  const input = $("strength");
  const usesStrength = kind === "network" || kind === "alphabeta";
  $("strength-field").hidden = !usesStrength;
  input.disabled = !usesStrength;
  $("model-field").hidden = kind !== "network";
  $("model").disabled = kind !== "network";
  if (usesStrength) {
    $("strength-label").textContent = kind === "network" ? "Simulations per move" : "Milliseconds per move";
    input.max = String(strengthMax());
    input.value = String(Math.min(kind === "network" ? DEFAULT_SIMS : DEFAULT_MS, strengthMax()));
  }
}

// The column and row inputs always show the chosen size; typing in them
// switches the preset to "custom".
function onSizeChange() {
  const value = $("size").value;
  if (value === "custom") return;
  const [cols, rows] = value.split("x");
  $("size-cols").value = cols;
  $("size-rows").value = rows;
}

function onDimsInput() {
  $("size").value = "custom";
}

// Makes the form describe a game that came from elsewhere (an upload, a reload).
function syncForm(g) {
  const sizes = [...$("size").options].map((o) => o.value);
  $("size").value = sizes.includes(g.size) ? g.size : "custom";
  const [cols, rows] = g.size.split("x");
  $("size-cols").value = cols;
  $("size-rows").value = rows;
  if (g.opponent.kind !== "human") $("color").value = g.human;
  $("opponent").value = g.opponent.kind;
  onOpponentChange();
  if (g.opponent.sims) $("strength").value = String(g.opponent.sims);
  if (g.opponent.ms) $("strength").value = String(g.opponent.ms);
}

function applyInfo(info) {
  Object.assign(state.limits, info.limits || {});
  const models = $("model");
  for (const m of info.models || []) {
    const trained = (m.trained_on || []).join(", ");
    models.append(new Option(trained ? `${m.name} (trained on ${trained})` : m.name, m.name));
  }
  // Sizes the server offers beyond the built-in list go before "custom".
  const sizes = $("size");
  const custom = sizes.querySelector('option[value="custom"]');
  for (const preset of info.presets || []) {
    if (![...sizes.options].some((o) => o.value === preset)) {
      sizes.insertBefore(new Option(preset.replace("x", " × "), preset), custom);
    }
  }
  $("strength").max = String(strengthMax());
  if (!$("strength").disabled) clampStrength();
  if (info.version) $("version").textContent = `konane ${info.version}`;
}

// ---------------------------------------------------------------- start

function wire() {
  $("board").addEventListener("click", (event) => {
    const btn = event.target.closest("button.cell");
    if (btn) onCell(btn.dataset.cell);
  });
  $("board").addEventListener("keydown", onBoardKey);
  $("board").addEventListener("focusin", (event) => {
    const btn = event.target.closest("button.cell");
    if (btn) setFocusCell(btn.dataset.cell);
  });
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && state.selected) {
      select(null);
      say("");
    }
  });

  $("setup").addEventListener("submit", (event) => {
    event.preventDefault();
    newGame();
  });
  $("size").addEventListener("change", onSizeChange);
  $("size-cols").addEventListener("input", onDimsInput);
  $("size-rows").addEventListener("input", onDimsInput);
  $("opponent").addEventListener("change", onOpponentChange);
  // An emptied field stays empty while the user types (WebDriver's clear()
  // fires change too); the default fills it only when a game is created.
  $("strength").addEventListener("change", () => {
    if ($("strength").value.trim() !== "") clampStrength();
  });

  $("undo").addEventListener("click", undo);
  $("hint").addEventListener("click", hint);
  $("analyse").addEventListener("click", toggleAnalysis);
  $("download").addEventListener("click", download);
  $("upload").addEventListener("click", () => $("upload-file").click());
  $("upload-file").addEventListener("change", (event) => {
    const file = event.target.files && event.target.files[0];
    event.target.value = ""; // choosing the same file again still fires change
    if (file) uploadRecord(file);
  });
  $("heatmap").addEventListener("change", () => {
    const g = state.game;
    const a = state.analysis;
    if ($("heatmap").checked && !(g && a && a.position === g.position)) {
      say("No analysis of this position yet: ask for a hint or press Analyse");
    }
    renderBoard();
  });
  window.addEventListener("pagehide", stopAnalysis);
}

async function init() {
  wire();
  onSizeChange();
  onOpponentChange();
  render();
  try {
    applyInfo(await api("GET", "/api/v1/info"));
  } catch (err) {
    say(`Could not read the server's limits: ${err.message}`, "error");
  }
  // Continue the game named in the address (after a reload), else start one.
  const match = /#game=([A-Za-z0-9_-]+)/.exec(location.hash);
  if (match) {
    const ok = await run("create", async () => {
      const g = await api("GET", `/api/v1/games/${match[1]}`);
      setGame(g);
      syncForm(g);
      say(`Continuing the ${g.size} game`);
    });
    if (ok) {
      await maybeEngine();
      return;
    }
  }
  if (!state.game && !state.busy) await newGame();
}

init();
