#!/usr/bin/env node
// `npm run users -- <command>`: dashboard users from the command line (the
// first admin, a forgotten password), using the build in dist/ and the
// server's environment (DATABASE_URL, REDIS_URL or REDIS_CLUSTER_NODES, REDIS_PREFIX).
//   create --username <name> --role <role> [--project default]
//   passwd --username <name> [--project default]   (ends the user's sessions)
//   list [--project default]
// The password is read from stdin: typed at a prompt (not echoed, asked
// twice) on a terminal, else the first line of what is piped in. Never from
// the command line: arguments show in `ps` and in shell history.
// Exit code: 0 done, 1 refused or failed, 2 bad arguments.
const path = require('node:path');
const { existsSync } = require('node:fs');

const dist = path.resolve(__dirname, '../dist');
if (!existsSync(path.join(dist, 'auth/user-store.js'))) {
  console.error('users: dist/ is missing or stale: run npm run build first');
  process.exit(1);
}
const { loadConfig } = require(path.join(dist, 'config/config'));
const { openPostgres } = require(path.join(dist, 'postgres/data-source'));
const { createRedis } = require(path.join(dist, 'redis/connection'));
const { createRedisStores } = require(path.join(dist, 'redis/stores'));
const { ROLES } = require(path.join(dist, 'core/access'));
const { USERNAME_PATTERN, passwordProblem } = require(path.join(dist, 'core/user-credentials'));
const { hashPassword } = require(path.join(dist, 'auth/password-hasher'));
const { UserStore } = require(path.join(dist, 'auth/user-store'));
const { SessionStore } = require(path.join(dist, 'auth/session-store'));

const USAGE = 'usage: npm run users -- create --username <name> --role <role> [--project default] | passwd --username <name> [--project default] | list [--project default]';

function bad(message) {
  console.error(`users: ${message}\n${USAGE}`);
  process.exit(2);
}

function parseArgs(argv) {
  const [command, ...rest] = argv;
  if (!['create', 'passwd', 'list'].includes(command)) bad(`unknown command ${JSON.stringify(command ?? '')}`);
  const out = { command, project: 'default', username: null, role: null };
  for (let i = 0; i < rest.length; i++) {
    const flag = rest[i];
    const value = rest[i + 1];
    if (flag === '--password' || flag.startsWith('--password=')) bad('the password is never taken from the command line (it would show in ps): type it at the prompt or pipe it on stdin');
    if (flag === '--username' && value !== undefined) out.username = value;
    else if (flag === '--role' && value !== undefined) out.role = value;
    else if (flag === '--project' && value !== undefined) out.project = value;
    else bad(`bad argument ${flag}`);
    i++;
  }
  if (command !== 'list' && (!out.username || !USERNAME_PATTERN.test(out.username))) bad(`--username must match ${USERNAME_PATTERN.source}`);
  if (command === 'create' && !ROLES.includes(out.role)) bad(`--role must be one of ${ROLES.join(', ')}`);
  if (!/^[a-z0-9][a-z0-9_-]{0,63}$/.test(out.project)) bad('--project must be a project name');
  return out;
}

/** One line typed without echo (a terminal). */
function promptHidden(question) {
  return new Promise((resolve, reject) => {
    const stdin = process.stdin;
    process.stderr.write(question);
    stdin.setRawMode(true);
    stdin.resume();
    stdin.setEncoding('utf8');
    let line = '';
    const onData = (chunk) => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n') {
          done();
          return resolve(line);
        }
        if (ch === '\u0003') {
          done();
          return reject(new Error('cancelled'));
        }
        if (ch === '\u007f' || ch === '\b') line = [...line].slice(0, -1).join('');
        else line += ch;
      }
    };
    const done = () => {
      stdin.removeListener('data', onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write('\n');
    };
    stdin.on('data', onData);
  });
}

/** The first line piped on stdin (without its line ending). */
async function readPiped() {
  let data = '';
  for await (const chunk of process.stdin) {
    data += chunk;
    if (data.length > 65_536) break;
  }
  return data.split(/\r?\n/)[0];
}

async function readPassword() {
  let pw;
  if (process.stdin.isTTY) {
    pw = await promptHidden('password: ');
    const problem = passwordProblem(pw);
    if (problem) throw new Error(`password ${problem}`);
    if ((await promptHidden('again: ')) !== pw) throw new Error('the two passwords differ');
  } else {
    pw = await readPiped();
  }
  const problem = passwordProblem(pw);
  if (problem) throw new Error(`password ${problem}`);
  return pw;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const config = loadConfig(process.env);
  const password = args.command === 'list' ? null : await readPassword();
  const { dataSource } = await openPostgres(config.databaseUrl, 2);
  try {
    const users = new UserStore(dataSource);
    if (args.command === 'list') {
      for (const u of await users.list(args.project)) console.log(`${u.id}  ${u.role.padEnd(8)}  ${u.disabledAt ? 'disabled' : 'enabled '}  ${u.username}`);
    } else if (args.command === 'create') {
      const found = await dataSource.query('SELECT 1 FROM projects WHERE name = $1', [args.project]);
      if (!found.length) throw new Error(`no project ${args.project} (a root key creates one: POST /projects)`);
      const u = await users.create({ username: args.username, passwordHash: await hashPassword(password), project: args.project, role: args.role });
      console.log(`created user ${u.username} (${u.id}), ${u.role} of project ${u.project}`);
    } else {
      const found = await users.findForLogin(args.username);
      if (!found || !found.roles.has(args.project)) throw new Error(`no user ${args.username} in project ${args.project}`);
      await users.update(found.id, args.project, { passwordHash: await hashPassword(password) });
      const redis = createRedis(config, { name: 'sluice-users' });
      try {
        const ended = await new SessionStore(createRedisStores(redis, config.redisPrefix).sessions, config.sessionIdleMs, config.sessionMaxMs).revokeUser(found.id);
        console.log(`password of ${found.username} changed; ${ended} session(s) ended`);
      } finally {
        redis.disconnect();
      }
    }
  } finally {
    await dataSource.destroy();
  }
}

main().catch((e) => {
  console.error(`users: ${e.message}`);
  process.exit(1);
});
