/*
 * CPU time of the processes a benchmark involves, for CPU-per-job splits
 * (Linux /proc; NaN elsewhere): one process by pid (all its threads), every
 * `postgres` process (and the backends serving one database apart), and
 * Redis from INFO cpu. All in seconds, cumulative: take deltas.
 */
const fs = require('node:fs');

const CLOCK_TICKS = 100; // USER_HZ: the unit of utime/stime in /proc/<pid>/stat

/** utime + stime of a /proc …/stat line, seconds; and the command name. */
function parseStat(s) {
  const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
  return { comm: s.slice(s.indexOf('(') + 1, s.lastIndexOf(')')), cpu: (Number(f[11]) + Number(f[12])) / CLOCK_TICKS };
}

/** CPU seconds (user + system) used so far by process `pid`, all threads. */
function processCpu(pid) {
  try {
    return parseStat(fs.readFileSync(`/proc/${pid}/stat`, 'utf8')).cpu;
  } catch {
    return NaN;
  }
}

/**
 * CPU seconds used so far by each process named `postgres` (server, backends,
 * WAL writer, checkpointer, …), by pid, each marked `ours` when it is a
 * backend serving `database` (its title reads `postgres: <user> <db> …`).
 * Take the difference of two with postgresDelta: a plain sum would drop
 * whatever a backend that exits meanwhile had used before (even below zero).
 * @returns {Map<string, {cpu: number, ours: boolean}>}
 */
function postgresCpu(database) {
  const out = new Map();
  // `postgres: [<cluster>: ]<user> <database> <host>(<port>)|[local] <state>`
  const title = database && new RegExp(`^postgres: (?:\\S+: )?\\S+ ${database.replace(/[^\w]/g, '\\$&')} (?:\\S+\\(\\d+\\)|\\[local\\]) `);
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const { comm, cpu } = parseStat(fs.readFileSync(`/proc/${d}/stat`, 'utf8'));
      if (comm !== 'postgres') continue;
      out.set(d, { cpu, ours: !!title && title.test(fs.readFileSync(`/proc/${d}/cmdline`, 'utf8')) });
    } catch {
      // the process ended meanwhile
    }
  }
  return out;
}

/**
 * CPU seconds the postgres processes used between two postgresCpu() readings:
 * `all`, and `ours` (the backends of the database). Per process: one started
 * meanwhile counts whole, one that ended meanwhile is missing its last stretch.
 */
function postgresDelta(before, after) {
  let all = 0;
  let ours = 0;
  for (const [pid, { cpu, ours: mine }] of after) {
    const d = cpu - (before.get(pid)?.cpu ?? 0);
    all += d;
    if (mine) ours += d;
  }
  return { all, ours };
}

/** CPU seconds Redis has used (INFO cpu: used_cpu_sys + used_cpu_user, all its threads). */
async function redisCpu(redis) {
  const info = await redis.info('cpu');
  const get = (k) => Number(new RegExp(`${k}:([\\d.]+)`).exec(info)[1]);
  return get('used_cpu_sys') + get('used_cpu_user');
}

/** INFO commandstats as { command: { calls, usec } } (Redis' own per-command counters, µs of CPU). */
async function redisCommands(redis) {
  const out = {};
  for (const m of (await redis.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) out[m[1]] = { calls: Number(m[2]), usec: Number(m[3]) };
  return out;
}

/**
 * The commands run between two redisCommands snapshots, per job: "evalsha 0.10×41µs xack 0.05×3µs …"
 * (calls per job × µs per call), the `top` commands by CPU.
 */
function commandsPerJob(a, b, n, top = 6) {
  const rows = Object.entries(b)
    .map(([cmd, v]) => ({ cmd, calls: v.calls - (a[cmd]?.calls ?? 0), usec: v.usec - (a[cmd]?.usec ?? 0) }))
    .filter((r) => r.calls > 0 && !['info', 'ping'].includes(r.cmd))
    .sort((x, y) => y.usec - x.usec)
    .slice(0, top);
  return rows.map((r) => `${r.cmd} ${(r.calls / n).toFixed(3)}×${(r.usec / r.calls).toFixed(1)}µs`).join(' ');
}

module.exports = { processCpu, postgresCpu, postgresDelta, redisCpu, redisCommands, commandsPerJob };
