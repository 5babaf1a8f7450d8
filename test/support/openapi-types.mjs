// Generates the TypeScript types a client would (openapi-typescript, default
// options) from an OpenAPI document. Run as a child process (the library is
// ESM, jest runs CommonJS):  node test/support/openapi-types.mjs < doc.json
import openapiTS, { astToString } from 'openapi-typescript';

let source = '';
process.stdin.setEncoding('utf8');
for await (const chunk of process.stdin) source += chunk;
const ast = await openapiTS(JSON.parse(source), { silent: true });
process.stdout.write(astToString(ast));
