// What labeler/keys.js predicts, run in Node for tests/test_key_cases.py.
//
// Reads from stdin {"keys_js": path, "table": the key table (labeler/keys.py browser_table),
// "cases": {name: [[panel, key], ...]}}: each key with the panel the server sent before it.
// Writes {name: {"answered": [...], "typed": [[...], ...]}}: "answered", a prediction per key,
// each on the server's panel before it, with the models Z returns to carried over as the page
// carries them (while the server's last undoable action is the press that kept them);
// "typed", from each step on, the keys from there predicted on that step's panel alone, as
// when they are typed before the server answers. A prediction is the model's query, current
// card and cards, or null where keys.js leaves the outcome to the server.
// With "schedules": [[rankings, grades, threshold], ...] (rankings as card indices, grades a
// grade or null per card), also writes "schedules": keys.js's first-hit schedule of each,
// [each ranking settled, holes, the card to judge next], to compare with labeler/pooling.py.

import { readFileSync } from "node:fs";

// keys.js is browser code: on loading, and when the component is mounted (which is how it
// receives the key table), it touches only these few parts of a page.
globalThis.MutationObserver = class {
  observe() {}
  disconnect() {}
};
globalThis.document = {
  body: {},
  documentElement: { dataset: {} },
  querySelector: () => null,
  querySelectorAll: () => [],
  addEventListener() {},
  removeEventListener() {},
};

const input = JSON.parse(readFileSync(0, "utf-8"));
const source = readFileSync(input.keys_js, "utf-8");
const keys = await import(`data:text/javascript;base64,${Buffer.from(source).toString("base64")}`);
const unmount = keys.default({
  data: { keys: [], table: input.table, panel: null },
  parentElement: { querySelector: () => null },
  setStateValue() {},
});
unmount();

function seen(model) {
  if (!model || model.query == null) return null;
  return { query: model.query, current: model.current, cards: model.cards };
}

function answered(steps) {
  let kept = [];
  return steps.map(([panel, key]) => {
    const model = keys.copyModel(panel);
    if (!keys.keptStands(kept, panel)) kept = [];
    if (model) model.undo = kept;
    const next = keys.step(model, key);
    kept = (next && next.undo) || [];
    return seen(next);
  });
}

function typed(steps) {
  let model = keys.copyModel(steps[0][0]);
  return steps.map(([, key]) => {
    model = keys.step(model, key);
    return seen(model);
  });
}

function typedFromEachStep(steps) {
  return steps.map((_, start) => typed(steps.slice(start)));
}

const out = {};
for (const [name, steps] of Object.entries(input.cases)) {
  out[name] = { answered: answered(steps), typed: typedFromEachStep(steps) };
}
if (input.schedules) {
  out.schedules = input.schedules.map(([rankings, grades, threshold]) => [
    rankings.map((ranking) => keys.runSettled(ranking, grades, threshold)),
    keys.holes(rankings, grades, threshold),
    keys.nextToJudge(rankings, grades, threshold),
  ]);
}
process.stdout.write(JSON.stringify(out));
