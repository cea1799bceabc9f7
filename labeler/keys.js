// goldset key listener (a Streamlit v2 component, no build step).
//
// Every accepted key press is appended to an ordered log of [seq, key, ms] and the
// whole unacknowledged log is sent as component state. Python applies only the
// entries newer than the last one it applied, then acknowledges that seq through
// `data.applied`, and this module drops what was acknowledged. A press typed while
// the server is busy therefore rides along with the next state update: nothing is
// coalesced away, nothing is applied twice.
//
// The module is loaded once per page and re-run whenever `data` changes, so the log
// lives at module level and the listener is one function object (adding it again
// is a no-op). A reload starts a new page id, which tells Python to start over.

const pageId = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
const pending = [];
let seq = 0;
let accepted = "";
let focusTargets = {};
let follow = null;
let send = null;

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

// Keep the element matching `follow` (the current candidate) in view as it moves down.
let followed = null;
const keepInView = new MutationObserver(() => {
  const element = follow && document.querySelector(follow);
  if (element && element !== followed) element.scrollIntoView({ block: "nearest" });
  followed = element;
});

function onKeyDown(event) {
  if (event.key === "Escape" && isTyping(event.target)) {
    // Leave the notes or search field, so that the next key judges again.
    event.target.blur();
    return;
  }
  if (event.ctrlKey || event.metaKey || event.altKey || event.repeat) return;
  if (isTyping(event.target) || event.key.length !== 1) return;
  const field = focusTargets[event.key] && findField(focusTargets[event.key]);
  if (field) {
    // A key that jumps to a text field (e.g. "/" to search) is not sent to Python.
    event.preventDefault();
    field.focus();
    return;
  }
  const key = event.key.toLowerCase();
  if (!accepted.includes(key)) return;
  event.preventDefault();
  seq += 1;
  pending.push([seq, key, Math.round(performance.now())]);
  if (send) send();
}

export default function ({ data, parentElement, setStateValue }) {
  accepted = (data && data.keys) || "";
  focusTargets = (data && data.focus) || {};
  follow = (data && data.follow) || null;
  keepInView.observe(document.body, { childList: true, subtree: true });
  const applied = data && data.page === pageId ? data.applied : 0;
  while (pending.length && pending[0][0] <= applied) pending.shift();
  send = () => setStateValue("log", { page: pageId, entries: pending.slice() });
  document.addEventListener("keydown", onKeyDown);
  const badge = parentElement.querySelector(".goldset-keys");
  if (badge) badge.dataset.ready = "1";
  return () => {
    document.removeEventListener("keydown", onKeyDown);
    keepInView.disconnect();
    send = null;
  };
}
