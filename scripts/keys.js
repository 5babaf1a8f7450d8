#!/usr/bin/env node
/*
 * `npm run keys -- <command>`: API keys from the command line, for the first
 * key of an installation (AUTH=on with no key yet) and for scripts. Uses the
 * same environment as the server (REDIS_URL, REDIS_PREFIX, DATABASE_URL).
 *
 *   npm run keys -- create --role admin [--name ops] [--project default] [--expires 2027-12-01T00:00:00Z]
 *   npm run keys -- list [--project default]
 *   npm run keys -- revoke <key id>
 *
 * `create` prints the secret once (on stdout, alone on its line when --quiet);
 * only its SHA-256 is stored.
 */
const path = require('node:path');
const dist = (p) => require(path.resolve(__dirname, '../dist', p));

const args = process.argv.slice(2);
const cmd = args[0];
const opt = (name, def) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : def;
};
const usage = 'usage: npm run keys -- create --role ROLE [--name NAME] [--project P] [--expires ISO] [--quiet] | list [--project P] | revoke ID';

async function main() {
  const { loadConfig } = dist('config/config');
  const { createRedis } = dist('redis/connection');
  const { createRedisStores } = dist('redis/stores');
  const { openPostgres } = dist('postgres/data-source');
  const { KeyStore } = dist('auth/key-store');
  const { isRole, ROLES } = dist('core/access');
  if (!['create', 'list', 'revoke'].includes(cmd)) throw new Error(usage);
  const config = loadConfig(process.env);
  const redis = createRedis(config, { name: 'sluice-keys-cli' });
  const { dataSource } = await openPostgres(config.databaseUrl, 2);
  const store = new KeyStore(createRedisStores(redis, config.redisPrefix).apiKeys, dataSource);
  try {
    const project = opt('project', 'default');
    if (cmd === 'create') {
      const role = opt('role');
      if (!isRole(role)) throw new Error(`--role must be one of ${ROLES.join(', ')}`);
      // The projects registry's durable copy is PostgreSQL's `projects` (a root key creates one: POST /projects).
      const found = await dataSource.query('SELECT 1 FROM projects WHERE name = $1', [project]);
      if (!found.length) throw new Error(`no project ${project} (a root key creates one: POST /projects)`);
      const name = opt('name', `cli-${role}`);
      if (!/^[^\p{Cc}]{1,128}$/u.test(name)) throw new Error('--name: 1..128 characters, no control characters');
      let expiresAt = null;
      const exp = opt('expires');
      if (exp) {
        const ms = Date.parse(exp);
        if (!Number.isFinite(ms) || ms <= Date.now()) throw new Error('--expires must be an ISO time in the future');
        expiresAt = new Date(ms).toISOString();
      }
      const k = await store.create({ name, role, project, expiresAt });
      if (args.includes('--quiet')) {
        console.log(k.secret);
      } else {
        console.log(`created key ${k.id} (${k.role} of ${k.project}${k.expiresAt ? `, expires ${k.expiresAt}` : ''})`);
        console.log(`secret (shown this once; store it now): ${k.secret}`);
      }
    } else if (cmd === 'list') {
      for (const k of await store.list(project)) {
        console.log(`${k.id}  ${k.role.padEnd(8)} ${k.root ? 'root ' : ''}${k.name}  created ${k.createdAt}${k.expiresAt ? `  expires ${k.expiresAt}` : ''}  last used ${k.lastUsedAt ?? 'never'}`);
      }
    } else {
      const id = args[1];
      if (!id) throw new Error(usage);
      const r = await store.revoke(id, null);
      if (!r) throw new Error(`no live key ${id}`);
      console.log(`revoked ${r.id} (${r.name})`);
    }
  } finally {
    await dataSource.destroy();
    redis.disconnect();
  }
}

main().catch((e) => {
  console.error(`keys: ${e.message}`);
  process.exit(1);
});
