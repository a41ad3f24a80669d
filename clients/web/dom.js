// Small DOM helpers: elements are built with textContent only (never innerHTML),
// so names, notes and messages from other operators cannot inject markup.

/** An element with attributes (`class`, `data-*`, …; `on*` functions become listeners) and children. */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === "") continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** Removes every child. */
export function clear(node) {
  while (node.firstChild) node.lastChild.remove();
}

/** Sets text only when it changed (ticks arrive ten times a second). */
export function setText(node, text) {
  if (node.textContent !== text) node.textContent = text;
}

const MONTHS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"];

/** The time circuits' readout of an ISO time, in UTC: {month, day, year, hour, minute, ampm} (seed 000). */
export function circuitParts(iso) {
  if (!iso) return null;
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})/.exec(iso);
  if (!m) return null;
  const hour24 = Number(m[4]);
  const hour12 = hour24 % 12 === 0 ? 12 : hour24 % 12;
  return { month: MONTHS[Number(m[2]) - 1], day: m[3], year: m[1], hour: String(hour12).padStart(2, "0"),
           minute: m[5], ampm: hour24 < 12 ? "AM" : "PM" };
}

/** `OCT 26 1985 01:21 AM` (PROTOCOL.md §14.1, "Display"). */
export function circuitText(iso) {
  const p = circuitParts(iso);
  return p ? `${p.month} ${p.day} ${p.year} ${p.hour}:${p.minute} ${p.ampm}` : "--- -- ---- --:-- --";
}

/** A duration in whole seconds as `1d 02:03:04` / `02:03:04` / `03:04`. */
export function clock(seconds) {
  const s = Math.max(0, Math.floor(seconds));
  const d = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  const two = (n) => String(n).padStart(2, "0");
  if (d > 0) return `${d}d ${two(h)}:${two(m)}:${two(sec)}`;
  if (h > 0) return `${two(h)}:${two(m)}:${two(sec)}`;
  return `${two(m)}:${two(sec)}`;
}

/** Milliseconds as `mm:ss.t` (hours when needed): the lap clock. */
export function stopwatch(ms) {
  const v = Math.max(0, Math.floor(ms));
  const tenths = Math.floor((v % 1000) / 100);
  return `${clock(v / 1000)}.${tenths}`;
}

/** A short UTC time: `14:05` today, else `NOV 22 14:05`, with `Z`. */
export function shortTime(iso) {
  if (!iso) return "—";
  const today = new Date().toISOString().slice(0, 10);
  const time = iso.slice(11, 16);
  if (iso.slice(0, 10) === today) return `${time}Z`;
  const p = circuitParts(iso);
  return p ? `${p.month} ${p.day} ${p.year !== today.slice(0, 4) ? p.year + " " : ""}${time}Z` : iso;
}
