// Jest cannot load ES modules from node_modules without a transform, and
// @fastify/static 10 (served by Swagger UI at /docs) requires
// content-disposition 3, which is ESM only. Node itself loads it fine
// (require(esm)), so only jest is pointed at the CommonJS 1.x of the same
// package, whose default export is the v3 `create`.
const v1 = require('../../node_modules/content-disposition/index.js');
module.exports = { create: v1, parse: v1.parse };
