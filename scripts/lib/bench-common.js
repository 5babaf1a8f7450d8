/*
 * Helpers the history benchmarks share (scripts/bench/history.js,
 * scripts/bench/write-models.js): command-line options, the median, and the
 * ids and packed options of the stream entries they make up.
 */
const { randomBytes } = require('node:crypto');

/** The value after `--<name>` on the command line, or `def`. */
function arg(name, def) {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? def : process.argv[i + 1];
}

/** The lower median of `xs` (NaN when empty). */
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor((s.length - 1) / 2)] : NaN;
};

/** A UUIDv7 whose time is `ms` (random otherwise), as the engine makes job ids. */
function v7(ms) {
  const r = randomBytes(10).toString('hex');
  const h = ms.toString(16).padStart(12, '0') + '7' + r.slice(0, 3) + ((parseInt(r[3], 16) & 3) | 8).toString(16) + r.slice(4, 19);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** An `enqueued` entry's packed options "maxAttempts;timeoutMs;backoff" (lua/includes/emit.lua). */
const ENQUEUE_OPTS = '3;1000;exponential|2000|3600000|equal';

module.exports = { arg, median, v7, ENQUEUE_OPTS };
