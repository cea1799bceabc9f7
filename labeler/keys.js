// goldset key listener (a Streamlit v2 component, no build step).
//
// Every accepted key press is appended to an ordered log of [seq, key, ms, target] and
// the unacknowledged log is sent as component state. Python applies only the
// entries newer than the last one it applied, then acknowledges that seq through
// `data.applied` — only once the press is committed — and this module drops what was
// acknowledged. A press typed while the server is busy therefore rides along with the
// next state update: nothing is coalesced away, nothing is applied twice. When the
// database was busy, `data.retry` changes and the unacknowledged log is sent again.
// When it refused the write (`data.unsaved`: full disk, read-only file), the page stays on
// the panel the server has, greyed, instead of the presses' predicted effect; every press is
// kept, the ones typed meanwhile are held, and the log is sent again every few seconds
// until a write succeeds.
//
// `target` names what was on screen: the query and, for a grade, the card and its grade
// then. The server applies the press only there (a stale tab is told, and refreshed). A
// press typed while the panel is greyed (only the server can tell what follows the presses
// before it) is held in the browser, unsent, until the server's answer shows the panel
// again; it is then aimed at what that answer shows, painted at once and sent. It is never
// sent unaimed, which would let the server apply it to whatever query it has open (another
// annotator's work can change the queue under the query fetched ahead).
//
// No wait between keys: `data.panel` is the server's model of the judging panel (the
// query, each card's grade, the current card). The listener replays its unacknowledged
// presses on that model and paints the result on the cards at once, in the keydown
// handler, so the cursor moves and cards are marked before the server answers. The
// server stays the single source of truth: each answer resets the model, and the page
// converges to what it stored. The server renders, hidden, the next query and the one Z
// returns to, so that completing a query and undoing it show at once too. A press whose
// effect cannot be foreseen (P, the history, an undo of what this page did not see, a grade
// on a done query its labels no longer complete) greys the panel until the server shows the
// next state. A first-hit query's next card, pooled from several runs or not, follows the
// server's rules (labeler/pooling.py), from each run's ranking of the cards (`rankings`).
// tests/key_cases.json holds these predictions and the server to one table of cases.
//
// What each key does is not written here: `data.table` is labeler/keys.py's key table
// (browser key names, each key's action), the one the server dispatches on, so the two
// cannot disagree.
//
// The module is loaded once per page and re-run whenever `data` changes, so the log
// lives at module level and the listener is one function object (adding it again
// is a no-op). A reload starts a new page id, which tells Python to start over.

const pageId = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
// [seq, key, ms, target, aimed, undo]: held presses (aimed false) are unsent; `undo` is the
// models Z returns to after this press (see step)
const pending = [];
let seq = 0;
let accepted = "";
let focusTargets = {};
let follow = null;
let send = null;
let base = null; // the server's panel model
let ackedUndo = []; // the models Z returns to, as of the last press the server acknowledged
let model = null; // base with the unacknowledged presses replayed on it
let lastRetry = 0;
let badge = null;
let attempt = 0; // makes every send a new state value, so that a resend reruns the script
let stalled = false; // the server could not store the first unacknowledged press
let table = { browser: {}, actions: {}, history: "" }; // labeler/keys.py's key table
let pendingFocus = null; // the label of a field a key asked for, not yet on the page

const UNDO_KEPT = 20; // models kept for Z; older undos wait for the server
const RETRY_BUSY_MS = 250; // another writer holds the database: it is free again soon
const RETRY_REFUSED_MS = 2000; // the file refuses writes: a person has to free space first

function isTyping(target) {
  if (!target || !target.tagName) return false;
  const tag = target.tagName.toLowerCase();
  return tag === "input" || tag === "textarea" || tag === "select" || target.isContentEditable;
}

function findField(label) {
  return Array.from(document.querySelectorAll("input, textarea")).find(
    (element) => element.getAttribute("aria-label") === label,
  );
}

// --- the optimistic panel model ----------------------------------------------------------

function copyModel(panel) {
  if (!panel || panel.query == null) return null;
  return { ...panel, cards: panel.cards.map((card) => [...card]) };
}

// The query on screen is done or left: show the one fetched ahead, if the server sent it.
function advance(m) {
  return m.next ? { ...copyModel(m.next), undo: m.undo } : { ...m, query: null };
}

function gradeOf(m, doc) {
  const card = m.cards.find(([d]) => d === doc);
  return card ? card[1] : null;
}

// Whether a card's grade was given by a verdict (U/M), not pressed.
function impliedOf(m, doc) {
  const card = m.cards.find(([d]) => d === doc);
  return Boolean(card && card[2]);
}

function actionOf(key) {
  return table.actions[key] || null;
}

// Whether a grade key attaches the selected search result instead of grading a card.
function attaching(m, key) {
  return Boolean(m.searching && m.grades.includes(key));
}

// --- the first-hit schedule: labeler/pooling.py's rules, line by line ----------------------
// A ranking is a run's cards as indices into `cards`, best first (keys.py `_query_panel`);
// `grades[i]` is card i's grade, null when unjudged. tests/test_key_cases.py holds these
// functions to pooling.py's: the case table (tests/key_cases.json) and drawn schedules.

// pooling.run_settled: the ranking's first relevant doc is known, or it has none.
function runSettled(ranking, grades, threshold) {
  for (const doc of ranking) {
    const grade = grades[doc];
    if (grade == null) return false;
    if (grade >= threshold) return true;
  }
  return true;
}

// pooling.holes: the unjudged docs that unsettled rankings put above their first relevant
// judged doc, each counted once.
function holes(rankings, grades, threshold) {
  const openDocs = new Set();
  for (const ranking of rankings) {
    for (const doc of ranking) {
      const grade = grades[doc];
      if (grade != null && grade >= threshold) break;
      if (grade == null) openDocs.add(doc);
    }
  }
  return openDocs.size;
}

// pooling.next_to_judge: the frontier (an unsettled ranking's first unjudged doc) at the
// smallest rank; ties to the frontier of the most rankings, then the earlier card (the
// display order: a card's index). Null when every ranking is settled. The doc-id tie-break
// of pooling.py never applies here: no two cards share an index.
function nextToJudge(rankings, grades, threshold) {
  const frontiers = new Map(); // doc -> the ranks it is the frontier at
  for (const ranking of rankings) {
    if (runSettled(ranking, grades, threshold)) continue;
    const rank = ranking.findIndex((doc) => grades[doc] == null);
    const doc = ranking[rank];
    if (!frontiers.has(doc)) frontiers.set(doc, []);
    frontiers.get(doc).push(rank);
  }
  if (!frontiers.size) return null;
  let best = null;
  for (const [doc, ranks] of frontiers) {
    const key = [Math.min(...ranks), -ranks.length, doc];
    if (best === null || tupleLess(key, best.key)) best = { doc, key };
  }
  return best.doc;
}

// Python's order of tuples of numbers: the first element that differs decides.
function tupleLess(a, b) {
  const at = a.findIndex((value, k) => value !== b[k]);
  return at >= 0 && a[at] < b[at];
}

// What a press does to the model: the same rules as labeler/judging.py for the presses
// whose outcome is certain; anything else leaves the query "unknown" (null) until the
// server answers.
function reduce(m, key) {
  if (!m || m.query == null) return m;
  const action = actionOf(key);
  if (m.armed) return action === "escape" ? { ...m, armed: false } : { ...m, query: null };
  if (action === "search") return { ...m, searching: true };
  if (action === "escape") return { ...m, searching: false };
  if (m.searching && (action === "down" || action === "up")) return m;
  if (action === "down" || action === "up") {
    const docs = m.cards.map(([doc]) => doc);
    if (!docs.length) return m;
    const step = action === "down" ? 1 : -1;
    const here = m.current == null ? (step > 0 ? -1 : 0) : docs.indexOf(m.current);
    return { ...m, current: docs[Math.min(Math.max(here + step, 0), docs.length - 1)] };
  }
  if (action === "history") return { ...m, armed: true };
  if (attaching(m, key)) return { ...m, query: null }; // the server holds the results
  if (m.grades.includes(key)) {
    if (m.current == null) return m;
    const grade = Number(key);
    const cards = m.cards.map(([doc, g, implied]) =>
      doc === m.current ? [doc, grade, false] : [doc, g, implied],
    );
    const grades = cards.map(([, g]) => g);
    const relevant = grades.some((g) => g != null && g >= m.threshold);
    let done, next;
    if (m.mode === "first_hit") {
      // Done by its labels (golden.derive_state): a relevant card and a settled run (or no
      // run at all); complete once no holes are left. Else the query stays open on the next
      // card to judge (judging.py's view: the store's next_doc), none when a verdict is due.
      // One ranking (an imported list, or one run) is the cards' order.
      const rankings = m.rankings || [cards.map((_, index) => index)];
      const settled = rankings.map((ranking) => runSettled(ranking, grades, m.threshold));
      done = relevant && (settled.some(Boolean) || !settled.length);
      if (done && !holes(rankings, grades, m.threshold)) return advance(m);
      const card = nextToJudge(rankings, grades, m.threshold);
      next = card == null ? null : cards[card][0];
    } else {
      // Full mode: complete once every card is graded and one of them is relevant (all
      // non-relevant, a verdict is due); the next card is the first unjudged one.
      const open = cards.filter(([, g]) => g == null);
      if (relevant && !open.length) return advance(m);
      done = false;
      next = open.length ? open[0][0] : null;
    }
    // A done query its labels no longer make done may still stand on a verdict, or on an
    // answer attached from search, which the cards do not show: only the server knows.
    if (m.done && !done) return { ...m, query: null };
    return { ...m, cards, current: next };
  }
  if (action === "unanswerable" || action === "miss") {
    const relevant = m.cards.some(([, g]) => g != null && g >= m.threshold);
    return relevant ? m : advance(m);
  }
  if (action === "skip" || action === "next") return advance(m);
  if (action === "attach" && !m.searching) return m;
  // A digit that is no grade here, outside the history: the server says it does nothing.
  if (action === null && table.history.includes(key)) return m;
  return { ...m, query: null }; // undo, previous, history, attach: the server decides
}

// Whether the server records the press as an action that Z (or X, on its query) undoes.
function isUndoable(m, key) {
  if (m.armed || attaching(m, key)) return false;
  if (m.grades.includes(key)) return m.current != null;
  const action = actionOf(key);
  if (action === "unanswerable" || action === "miss") {
    return !m.cards.some(([, g]) => g != null && g >= m.threshold);
  }
  return action === "skip";
}

// A press on the model, undo included: each undoable press keeps the model from before it
// (`undo`, newest last), so that Z shows that model again at once — the server's undo takes
// back the annotator's last action, which is that press unless another tab acted since (the
// server's answer then corrects the page). X does the same when that press was on the open
// query. An undo with nothing kept greys the panel until the server answers.
function step(m, key) {
  if (!m || m.query == null) return m;
  const kept = m.undo || [];
  const action = actionOf(key);
  if ((action === "undo" || action === "undo_here") && !m.armed) {
    const last = kept[kept.length - 1];
    if (!last || (action === "undo_here" && last.query !== m.query)) {
      return { ...m, query: null, undo: [] };
    }
    const searching = last.query === m.query && m.searching; // a query change closes search
    return { ...last, searching, undo: kept.slice(0, -1) };
  }
  const next = reduce(m, key);
  if (next === m || !isUndoable(m, key)) return next;
  const pressed = [m.query, m.grades.includes(key) ? m.current : null]; // as the log has it
  return { ...next, undo: [...kept.slice(-(UNDO_KEPT - 1)), { ...m, undo: undefined, pressed }] };
}

// The models kept for Z are this page's own: they stand only while the server's last
// undoable action (`undo_to`: query and doc) is the press that kept the newest — a click or
// another tab may have acted since.
function keptStands(kept, panel) {
  const last = kept[kept.length - 1];
  const to = panel && panel.undo_to;
  return Boolean(last && to && last.pressed[0] === to[0] && last.pressed[1] === to[1]);
}

function targetOf(m, key) {
  if (!m || m.query == null) return null;
  if (attaching(m, key) && !m.armed) return { query: m.query, attach: true };
  if (m.grades.includes(key) && !m.armed && m.current != null) {
    return { query: m.query, doc: m.current, grade: gradeOf(m, m.current) };
  }
  return { query: m.query };
}

// Whether a press typed now can be aimed: the panel is foreseen, or shows no query at all
// (nothing left to label: the press is sent with no target). A model whose query is null
// is unknown: the server has not yet shown what the presses before this one lead to; nor
// can anything be foreseen while the server cannot store the presses before this one.
function canAim(m) {
  return !stalled && (m === null || m.query != null);
}

// Rebuild the model from the server's panel and the presses it has not applied yet; a held
// press is aimed here, at the panel the server now shows. Returns whether any press was.
function replay(applied) {
  model = copyModel(base);
  if (model) model.undo = ackedUndo;
  let aimedNow = false;
  for (const entry of pending) {
    const [s, key, , target, aimed] = entry;
    if (s <= applied) continue;
    if (!aimed) {
      if (!canAim(model)) break; // still unknown: this press and the later ones stay held
      entry[3] = targetOf(model, key);
      entry[4] = true;
      aimedNow = true;
    } else if (model && target && target.query != null && target.query !== model.query) {
      // Aimed at another query than the one the server now shows (the queue changed under
      // the query fetched ahead): the server applies it there, so only the server can tell
      // what follows. Predict nothing until it answers; later presses are held.
      model = { ...model, query: null };
    }
    model = step(model, key);
    entry[5] = model && model.undo; // Z's models after this press, kept when it is acknowledged
  }
  if (stalled) model = copyModel(base); // shown as the server has it: nothing stored since
  return aimedNow;
}

// The presses that may go to the server: every one up to the first held one.
function sendable() {
  const held = pending.findIndex((entry) => !entry[4]);
  return (held < 0 ? pending : pending.slice(0, held)).map((entry) => entry.slice(0, 4));
}

function setText(element, text) {
  if (element.textContent !== text) element.textContent = text;
}

// Paint the model on the cards rendered by the server: the list of the model's query is
// shown (the one on screen, or the next one, rendered hidden ahead of time) and its cards
// marked; the heading names the model's query.
function paint() {
  const lists = Array.from(document.querySelectorAll(".gs-cards"));
  if (!lists.length || !base || lists[0].dataset.query !== base.query) return;
  const list = model && lists.find((element) => element.dataset.query === model.query);
  if (!list) {
    // Only the server knows what comes next: grey what is on screen until it answers.
    for (const element of lists) {
      if (!element.classList.contains("gs-hidden")) element.classList.add("gs-pending");
    }
    return;
  }
  for (const element of lists) {
    element.classList.toggle("gs-hidden", element !== list);
    element.classList.toggle("gs-pending", stalled);
  }
  for (const banner of document.querySelectorAll(".gs-verdict[data-query]")) {
    banner.classList.toggle("gs-hidden", banner.dataset.query !== model.query);
  }
  const heading = document.querySelector(".gs-query-text");
  if (heading) {
    setText(heading, model.text);
    const meta = heading.nextElementSibling;
    if (meta) setText(meta, model.meta);
  }
  for (const card of list.querySelectorAll(".gs-card[data-doc]")) {
    const doc = card.dataset.doc;
    const grade = gradeOf(model, doc);
    const state = doc === model.current ? "current" : grade != null ? "judged" : "waiting";
    const wanted = `gs-card gs-${state}`;
    if (card.className !== wanted) card.className = wanted;
    const shown = grade == null ? "" : String(grade);
    if (card.dataset.grade !== shown) card.dataset.grade = shown;
    const head = card.querySelector(".gs-head");
    let label = head.querySelector(".gs-label");
    if (grade != null) {
      if (!label) {
        label = document.createElement("span");
        head.insertBefore(label, head.querySelector(".gs-now"));
      }
      const implied = impliedOf(model, doc);
      const labelClass = implied ? "gs-label gs-implied" : "gs-label";
      if (label.className !== labelClass) label.className = labelClass;
      const name = implied ? model.implied : model.names[grade] || `grade ${grade}`;
      setText(label, `${grade} · ${name}`);
    } else if (label) {
      label.remove();
    }
    let marker = head.querySelector(".gs-now");
    if (state === "current" && !marker) {
      marker = document.createElement("span");
      marker.className = "gs-now";
      marker.textContent = model.marker;
      head.appendChild(marker);
    } else if (state !== "current" && marker) {
      marker.remove();
    }
    const text = card.querySelector(".gs-text");
    const textClass = `gs-text gs-text-${state}`;
    if (text && text.className !== textClass) text.className = textClass;
  }
}

// The badge (inside the component) says "saving…" while a press is not acknowledged; the
// page's root element says it too, for tests and benchmarks outside the component's DOM.
function showSaving() {
  const saving = pending.length > 0;
  const flag = saving ? "1" : "";
  if (document.documentElement.dataset.goldsetSaving !== flag) {
    document.documentElement.dataset.goldsetSaving = flag;
  }
  const unsaved = stalled && saving ? String(pending.length) : "";
  if (document.documentElement.dataset.goldsetUnsaved !== unsaved) {
    document.documentElement.dataset.goldsetUnsaved = unsaved;
  }
  if (!badge) return;
  const keys = pending.map((entry) => entry[1]).join(" ");
  setText(badge, unsaved ? `not saved, kept: ${keys}` : saving ? "saving…" : "⌨ keys on");
  badge.dataset.saving = flag;
}

// Keep the element matching `follow` (the current candidate) in view as it moves, and
// repaint the model whenever the server re-renders the cards.
let followed = null;
function keepFollowedInView() {
  const element = follow && document.querySelector(follow);
  if (element && element !== followed) element.scrollIntoView({ block: "nearest" });
  followed = element;
}
const keepInView = new MutationObserver(() => {
  paint();
  keepFollowedInView();
  focusPending();
});

function onKeyDown(event) {
  if (event.key === "Escape") pendingFocus = null; // Escape always leaves the field
  if (event.key === "Escape" && isTyping(event.target)) {
    // Leave the notes or search field, so that the next key judges again.
    event.target.blur();
    return;
  }
  if (event.ctrlKey || event.metaKey || event.altKey || event.repeat) return;
  if (isTyping(event.target)) return;
  const special = table.browser[event.key];
  if (!special && event.key.length !== 1) return;
  const field = focusTargets[event.key] && findField(focusTargets[event.key]);
  if (field) {
    // A key that jumps to a text field (e.g. "/" to search) is not sent to Python.
    event.preventDefault();
    field.focus();
    return;
  }
  // The field is not on the page yet: the key is sent (the server opens it), and the field
  // is focused as soon as it is rendered — unless Escape is pressed first.
  if (focusTargets[event.key]) pendingFocus = focusTargets[event.key];
  const key = special || event.key.toLowerCase();
  // After H any key is sent: the server then says which entry it is not, and no longer
  // waits for one (a grade typed next is a grade).
  if (!accepted.includes(key) && !(model && model.armed)) return;
  event.preventDefault();
  seq += 1;
  const aimed = canAim(model);
  const entry = [seq, key, Math.round(performance.now()), aimed ? targetOf(model, key) : null, aimed];
  pending.push(entry);
  if (!stalled) model = step(model, key); // held while stalled: the page stays as stored
  if (aimed) entry[5] = model && model.undo;
  paint();
  keepFollowedInView();
  showSaving();
  if (send && aimed) send();
}

// Focus the field a key asked for as soon as the page holds it: in the same task as the
// render that adds it, so that it is focused before anything below it (the search results)
// shows, and an Escape pressed on seeing them always finds it focused, and leaves it.
function focusPending() {
  const field = pendingFocus && findField(pendingFocus);
  if (!field) return;
  pendingFocus = null;
  field.focus();
  requestAnimationFrame(() => document.activeElement === field && field.select()); // after React
}

export default function ({ data, parentElement, setStateValue }) {
  accepted = (data && data.keys) || "";
  table = (data && data.table) || table;
  focusTargets = (data && data.focus) || {};
  follow = (data && data.follow) || null;
  keepInView.observe(document.body, { childList: true, subtree: true });
  const applied = data && data.page === pageId ? data.applied : 0;
  stalled = Boolean(data && data.unsaved);
  while (pending.length && pending[0][0] <= applied) ackedUndo = pending.shift()[5] || [];
  base = (data && data.panel) || null;
  if (!keptStands(ackedUndo, base)) ackedUndo = [];
  const aimedNow = replay(applied);
  send = () => {
    attempt += 1;
    setStateValue("log", { page: pageId, entries: sendable(), attempt });
  };
  if (aimedNow) setTimeout(() => send && send(), 0); // held presses now aimed: send them
  document.addEventListener("keydown", onKeyDown);
  badge = parentElement.querySelector(".goldset-keys");
  if (badge) badge.dataset.ready = "1";
  paint();
  showSaving();
  const retry = (data && data.retry) || 0;
  if (retry !== lastRetry) {
    lastRetry = retry;
    // The database was busy, or refused the write: the presses are still pending; send
    // them again shortly.
    const wait = stalled ? RETRY_REFUSED_MS : RETRY_BUSY_MS;
    if (pending.length) setTimeout(() => send && send(), wait);
  }
  focusPending();
  return () => {
    document.removeEventListener("keydown", onKeyDown);
    keepInView.disconnect();
    send = null;
  };
}

// The rules above, for tests/test_key_cases.py, which runs them (in Node) on the panels the
// server sends and holds them to the same table of cases as the server, and the first-hit
// schedule to pooling.py's. Streamlit uses only the default export.
export { copyModel, holes, keptStands, nextToJudge, runSettled, step };
