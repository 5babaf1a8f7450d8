import { readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { JOB_STATUSES, JobStatus, TERMINAL_STATUSES, TRANSITIONS, canTransition, isTerminal } from './job-status';

const LUA_DIR = resolve(__dirname, '../../lua');

/** The `event` values of API.md `GET /jobs/:id/events`. */
const API_EVENTS = [
  'enqueued', 'promoted', 'claimed', 'heartbeat_lost', 'progress', 'completed', 'retry_scheduled',
  'failed', 'stalled', 'released', 'cancelled', 'cancel_requested', 'retried_from_dlq',
  'purged', // an addition: DELETE /jobs/dlq
  'debounced', // API.md v1.2
  'unblocked', // API.md v1.2 "Workflows"
  'blocked', // an addition (workflows): a DLQ retry of a dependency brings a cancelled flow job back
];
/** Events that record something about an active job but are not a state transition. */
const NON_TRANSITION_EVENTS = new Set(['progress', 'purged']);

describe('JobStatus', () => {
  it('lists the seven API statuses (blocked: API.md v1.2 "Workflows")', () => {
    expect([...JOB_STATUSES].sort()).toEqual(['active', 'blocked', 'cancelled', 'completed', 'delayed', 'failed', 'waiting']);
    expect(new Set(JOB_STATUSES).size).toBe(JOB_STATUSES.length);
  });

  it('terminal statuses are completed, failed and cancelled', () => {
    expect([...TERMINAL_STATUSES].sort()).toEqual(['cancelled', 'completed', 'failed']);
    for (const s of JOB_STATUSES) expect(isTerminal(s)).toBe(['completed', 'failed', 'cancelled'].includes(s));
  });

  it('matches VALID_STATES of lua/includes/job.lua', () => {
    const text = readFileSync(join(LUA_DIR, 'includes', 'job.lua'), 'utf8');
    const m = /local VALID_STATES = \{([^}]*)\}/.exec(text);
    expect(m).not.toBeNull();
    const lua = [...(m as RegExpExecArray)[1].matchAll(/(\w+)\s*=\s*true/g)].map((x) => x[1]).sort();
    expect(lua).toEqual([...JOB_STATUSES].sort());
  });
});

describe('TRANSITIONS', () => {
  it('has no duplicate (from, to, event) rows and only known statuses and API events', () => {
    const keys = TRANSITIONS.map((t) => `${t.from}>${t.to}:${t.event}`);
    expect(new Set(keys).size).toBe(keys.length);
    for (const t of TRANSITIONS) {
      if (t.from !== null) expect(JOB_STATUSES).toContain(t.from);
      expect(JOB_STATUSES).toContain(t.to);
      expect(API_EVENTS).toContain(t.event);
    }
  });

  it('enqueue creates waiting, delayed or (a flow job) blocked jobs only', () => {
    expect(canTransition(null, 'waiting')).toBe(true);
    expect(canTransition(null, 'delayed')).toBe(true);
    expect(canTransition(null, 'blocked')).toBe(true);
    expect(TRANSITIONS.filter((t) => t.from === null).map((t) => t.event)).toEqual(['enqueued', 'enqueued', 'enqueued']);
    for (const s of ['active', 'completed', 'failed', 'cancelled'] as JobStatus[]) expect(canTransition(null, s)).toBe(false);
  });

  it('only an active job completes', () => {
    for (const s of JOB_STATUSES) expect(canTransition(s, 'completed')).toBe(s === 'active');
  });

  it('only a waiting job is claimed', () => {
    for (const s of JOB_STATUSES) expect(canTransition(s, 'active')).toBe(s === 'waiting' || s === 'active');
    expect(TRANSITIONS.filter((t) => t.to === 'active' && t.from !== 'active').map((t) => t.event)).toEqual(['claimed']);
  });

  it('terminal states are left only through a DLQ retry: its own, or for a cancelled flow job its dependency\'s (completed never)', () => {
    for (const t of TRANSITIONS) {
      if (t.from && isTerminal(t.from)) {
        if (t.event === 'blocked') expect(t).toEqual({ from: 'cancelled', to: 'blocked', event: 'blocked' });
        else expect(t).toEqual({ from: t.from, to: 'waiting', event: 'retried_from_dlq' });
      }
    }
    expect(canTransition('failed', 'blocked')).toBe(false);
    for (const s of JOB_STATUSES) expect(canTransition('completed', s)).toBe(false);
    expect(canTransition('failed', 'waiting')).toBe(true);
    expect(canTransition('cancelled', 'waiting')).toBe(true);
    expect(canTransition('failed', 'active')).toBe(false);
    expect(canTransition('cancelled', 'failed')).toBe(false);
  });

  it('cancel reaches cancelled from waiting, delayed, active and blocked only', () => {
    for (const s of JOB_STATUSES) expect(canTransition(s, 'cancelled')).toBe(['waiting', 'delayed', 'active', 'blocked'].includes(s));
  });

  it('a running job goes back to delayed only by a retry or a release with a delay', () => {
    expect(TRANSITIONS.filter((t) => t.to === 'delayed' && t.from !== null && t.from !== 'waiting' && t.from !== 'delayed' && t.from !== 'blocked')).toEqual([
      { from: 'active', to: 'delayed', event: 'retry_scheduled' },
      { from: 'active', to: 'delayed', event: 'released' },
    ]);
  });

  it('a debounce update moves a job only between waiting and delayed, and is the only way from waiting to delayed', () => {
    const debounced = TRANSITIONS.filter((t) => t.event === 'debounced');
    expect(debounced.map((t) => `${t.from}>${t.to}`).sort()).toEqual(['delayed>delayed', 'delayed>waiting', 'waiting>delayed', 'waiting>waiting']);
    expect(TRANSITIONS.filter((t) => t.from === 'waiting' && t.to === 'delayed').map((t) => t.event)).toEqual(['debounced']);
  });

  it('a blocked job enters at enqueue or from cancelled (event blocked), and leaves only unblocked to waiting/delayed or cancelled', () => {
    const key = (t: { from: JobStatus | null; to: JobStatus; event: string }) => `${t.from}>${t.to}:${t.event}`;
    expect(TRANSITIONS.filter((t) => t.to === 'blocked').map(key).sort()).toEqual(['cancelled>blocked:blocked', 'null>blocked:enqueued']);
    expect(TRANSITIONS.filter((t) => t.from === 'blocked').map(key).sort()).toEqual([
      'blocked>cancelled:cancelled', 'blocked>delayed:unblocked', 'blocked>waiting:unblocked',
    ]);
    expect(TRANSITIONS.filter((t) => t.event === 'unblocked' || t.event === 'blocked').every((t) => t.from === 'blocked' || t.to === 'blocked')).toBe(true);
    expect(isTerminal('blocked')).toBe(false);
  });

  it('every transition is reachable from enqueue', () => {
    const seen = new Set<JobStatus>();
    const todo: (JobStatus | null)[] = [null];
    while (todo.length) {
      const s = todo.pop() as JobStatus | null;
      for (const t of TRANSITIONS.filter((x) => x.from === s)) {
        if (!seen.has(t.to)) {
          seen.add(t.to);
          todo.push(t.to);
        }
      }
    }
    expect([...seen].sort()).toEqual([...JOB_STATUSES].sort());
  });
});

/**
 * Every event the Lua scripts emit, read from the source: emit(...) calls
 * and deadLetterCorrupt(...) (which emits 'failed' from its `from` argument).
 * Where a script passes a variable as from/to, VARIABLE_VALUES lists what that
 * variable can hold at that call (read from the script); an unknown variable
 * fails the test so the table is kept up to date.
 */
/**
 * Transitions allowed here before their Redis script exists (none now: the
 * workflow ones are emitted by lua/enqueueJobs-5.lua, lua/moveFlowJobs-7.lua
 * and lua/cancelJob-4.lua). A row a script already emits fails the test
 * below, so this list cannot outlive the scripts.
 */
const PENDING_SCRIPTS: readonly string[] = [];

const VARIABLE_VALUES: Record<string, (string | null)[]> = {
  'cancelJob-4.lua:cancelled:from:s': ['waiting', 'delayed'],
  'enqueueJobs-5.lua:enqueued:to:state': ['waiting', 'delayed', 'blocked'],
  'moveFlowJobs-7.lua:unblocked:to:to': ['delayed', 'waiting'],
  'enqueueJobs-5.lua:debounced:to:ns': ['waiting', 'delayed'],
  'failJob-7.lua:cancelled:to:to': ['cancelled'],
  'failJob-7.lua:retry_scheduled:to:to': ['delayed', 'waiting'],
  'failJob-7.lua:failed:to:to': ['failed'],
  'retryJob-5.lua:retried_from_dlq:from:f[1]': ['failed', 'cancelled'],
};

interface LuaEmit {
  file: string;
  event: string;
  from: string | null;
  to: string;
}

function luaEmits(): LuaEmit[] {
  const files = [
    ...readdirSync(LUA_DIR).filter((f) => f.endsWith('.lua')),
    ...readdirSync(join(LUA_DIR, 'includes')).map((f) => `includes/${f}`),
  ];
  const out: LuaEmit[] = [];
  const lit = (s: string) => /^'(\w*)'$/.exec(s.trim())?.[1];
  for (const file of files) {
    const text = readFileSync(join(LUA_DIR, file), 'utf8');
    const values = (event: string, which: 'from' | 'to', arg: string): (string | null)[] => {
      const l = lit(arg);
      if (l !== undefined) return [l === '' ? null : l];
      const key = `${file.replace('includes/', '')}:${event}:${which}:${arg.trim()}`;
      const v = VARIABLE_VALUES[key];
      if (!v) throw new Error(`unknown variable in an emit call: ${key}; add it to VARIABLE_VALUES`);
      return v;
    };
    for (const m of text.matchAll(/^(?!\s*--).*?\bemit\(([^)]*)/gm)) {
      const args = m[1].split(',');
      if (args.length < 6) continue; // `emit()` named in a comment
      if (args[0].trim() === 'eventsKey' && args[2].trim() === 'event') continue; // the definition
      const event = lit(args[2]);
      if (event === undefined) throw new Error(`${file}: emit with a non-literal event: ${m[0]}`);
      if (event === 'failed' && file === 'includes/job.lua') continue; // deadLetterCorrupt body, checked at its callers
      for (const from of values(event, 'from', args[4])) for (const to of values(event, 'to', args[5])) out.push({ file, event, from, to: to as string });
    }
    // Hot paths write their event with an inline XADD (no table building): the
    // same header as emit(), "event|from|" .. to .. "|attempt|at", with a literal from.
    for (const m of text.matchAll(/'XADD',\s*KEYS\[\d+\],\s*'\*',\s*'h',\s*'([a-z_]+)\|(\w*)\|'\s*\.\.\s*(\w+)\s*\.\./g)) {
      const event = m[1];
      for (const from of values(event, 'from', `'${m[2]}'`)) for (const to of values(event, 'to', m[3])) out.push({ file, event, from, to: to as string });
    }
    // ... or with a literal from and to: "event|from|to|" .. attempt .. "|" .. at.
    for (const m of text.matchAll(/'XADD',\s*KEYS\[\d+\],\s*'\*',\s*'h',\s*'([a-z_]+)\|(\w*)\|(\w+)\|'/g)) {
      out.push({ file, event: m[1], from: m[2] === '' ? null : m[2], to: m[3] });
    }
    if (/'XADD',\s*KEYS\[\d+\],\s*'\*',\s*'e',\s*'(?!log')/.test(text)) throw new Error(`${file}: an event XADD without the header (see includes/emit.lua)`);
    for (const m of text.matchAll(/\bdeadLetterCorrupt\(([^)]*)\)/g)) {
      const args = m[1].split(',');
      if (args[5].trim() === 'from') continue; // the definition
      const from = lit(args[5]);
      if (from === undefined) throw new Error(`${file}: deadLetterCorrupt with a non-literal from: ${m[0]}`);
      out.push({ file, event: 'failed', from, to: 'failed' });
    }
  }
  return out;
}

describe('TRANSITIONS matches what the Lua scripts emit', () => {
  const emits = luaEmits();

  it('finds the emits of every transition script', () => {
    const files = new Set(emits.map((e) => e.file));
    for (const f of ['cancelJob-4.lua', 'claimJobs-8.lua', 'completeJobs-5.lua', 'enqueueJobs-5.lua', 'failJob-7.lua',
      'reapExpired-6.lua', 'releaseJobs-6.lua', 'retryJob-5.lua', 'updateProgress-1.lua', 'includes/promote.lua']) {
      expect(files).toContain(f);
    }
  });

  it('every event a script emits is an API event', () => {
    for (const e of emits) expect(API_EVENTS).toContain(e.event);
  });

  it('every (from, to, event) a script emits is an allowed transition', () => {
    for (const e of emits) {
      if (NON_TRANSITION_EVENTS.has(e.event)) {
        expect({ ...e, sameState: e.from === e.to }).toEqual({ ...e, sameState: true });
        continue;
      }
      const allowed = TRANSITIONS.some((t) => t.from === e.from && t.to === e.to && t.event === e.event);
      expect({ ...e, allowed }).toEqual({ ...e, allowed: true });
    }
  });

  it('every allowed transition is emitted by some script (but those of PENDING_SCRIPTS, emitted by none yet)', () => {
    for (const t of TRANSITIONS) {
      const found = emits.some((e) => e.from === t.from && e.to === t.to && e.event === t.event);
      const pending = PENDING_SCRIPTS.includes(`${t.from}>${t.to}:${t.event}`);
      expect({ ...t, found, pending }).toEqual({ ...t, found: !pending, pending });
    }
    for (const p of PENDING_SCRIPTS) expect(TRANSITIONS.map((t) => `${t.from}>${t.to}:${t.event}`)).toContain(p);
  });
});
