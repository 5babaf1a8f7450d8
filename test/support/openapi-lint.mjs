// Lints an OpenAPI document with Redocly's `recommended` ruleset.
// Run as a child process (the library is ESM, jest runs CommonJS):
//   node test/support/openapi-lint.mjs < doc.json
// Prints a JSON array of problems: {ruleId, severity, message, location}.
import { createConfig, lintFromString } from '@redocly/openapi-core';

let source = '';
process.stdin.setEncoding('utf8');
for await (const chunk of process.stdin) source += chunk;
const config = await createConfig({ extends: ['recommended'] });
const problems = await lintFromString({ source, absoluteRef: 'openapi.json', config });
const out = problems.map((p) => ({
  ruleId: p.ruleId,
  severity: p.severity,
  message: p.message,
  location: p.location.map((l) => l.pointer).join(' '),
}));
process.stdout.write(JSON.stringify(out));
