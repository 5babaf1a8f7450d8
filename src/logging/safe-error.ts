/**
 * What of an error may reach a log line. Client errors carry the data they
 * were sent: TypeORM's QueryFailedError has `query`, `parameters` (every SQL
 * parameter: payloads, names, ids) and `driverError`; pg errors have
 * `detail` (`Key (name)=(...) already exists`), `where` (`JSON data, line 1:
 * ...`, `COPY jobs, line 3, column payload: "..."`) and `hint`; ioredis reply
 * errors have `command: {name, args}`; a data exception's message itself may
 * quote the value (`invalid input syntax for type uuid: "..."`).
 *
 * {@link safeError} keeps a whitelist: the class name, the message with
 * quoted values replaced (identifiers such as `relation "jobs"` are kept),
 * the code / SQLSTATE, the schema, table, column, constraint and data type
 * names, the stack frames (not the stack's message line), and the `cause`,
 * treated the same way. Everything else is dropped.
 */

/** Words after which PostgreSQL and Redis quote a name, not a value. */
const NAME_BEFORE_QUOTE = new RegExp(
  '(?:relation|column|constraint|table|index|database|role|schema|function|type|sequence|trigger|encoding|extension|view|operator|user|savepoint|cursor|statement|portal|channel|server|tablespace|collation|script|command|parameter|option|variable)\\s*$',
  'i',
);

/** Error properties that name things (never values). */
const NAME_FIELDS = ['code', 'errno', 'syscall', 'severity', 'schema', 'table', 'column', 'constraint', 'dataType', 'routine'] as const;

const MAX_MESSAGE_CHARS = 2000;

/**
 * An error message with quoted values replaced by `"…"`: a double-quoted
 * part is kept only when a name kind precedes it (`relation "jobs"`,
 * `constraint "x"`); trailing byte dumps (`: 0xed 0xa0`) are cut too.
 */
export function scrubMessage(message: string): string {
  let out = '';
  let last = 0;
  const re = /"(?:[^"\\]|\\.|"")*"/g;
  for (let m = re.exec(message); m; m = re.exec(message)) {
    const before = message.slice(last, m.index);
    out += before;
    out += NAME_BEFORE_QUOTE.test(message.slice(Math.max(0, m.index - 20), m.index)) ? m[0] : '"…"';
    last = m.index + m[0].length;
  }
  out += message.slice(last);
  out = out.replace(/(:\s*)0x[0-9a-f]{2}(?:\s+0x[0-9a-f]{2})*/gi, '$10x…');
  return out.length > MAX_MESSAGE_CHARS ? `${out.slice(0, MAX_MESSAGE_CHARS)}…` : out;
}

/**
 * The loggable form of anything passed as `err` (or `error`, `reason`):
 * a string is scrubbed like a message; an Error or error-like object becomes
 * `{type, message, code?, table?, constraint?, ..., stack?, cause?}`.
 */
export function safeError(e: unknown, depth = 0): unknown {
  if (typeof e === 'string') return scrubMessage(e);
  if (e === null || typeof e !== 'object') return e;
  const src = e as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  const name = typeof src.name === 'string' ? src.name : (e as object).constructor?.name;
  if (name) out.type = name;
  if (typeof src.message === 'string') out.message = scrubMessage(src.message);
  for (const k of NAME_FIELDS) {
    const v = src[k];
    if (typeof v === 'string' || typeof v === 'number') out[k] = v;
  }
  if (typeof src.stack === 'string') {
    const frames = src.stack.split('\n').filter((l) => /^\s+at /.test(l));
    if (frames.length) out.stack = frames.join('\n');
  }
  if (src.cause !== undefined && depth < 3) out.cause = safeError(src.cause, depth + 1);
  return out;
}
