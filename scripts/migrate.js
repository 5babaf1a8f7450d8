#!/usr/bin/env node
// `npm run migrate`: creates the database if missing and applies pending migrations.
const path = require('node:path');
const { openPostgres } = require(path.resolve(__dirname, '../dist/postgres/data-source'));
const url = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/sluice';
openPostgres(url)
  .then(async ({ dataSource, applied }) => {
    console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
    await dataSource.destroy();
  })
  .catch((e) => {
    console.error(`migrate failed: ${e.message}`);
    process.exit(1);
  });
