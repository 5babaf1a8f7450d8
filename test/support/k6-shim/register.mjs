// `node --import ./register.mjs run.mjs`: maps the k6/* imports of load-test.js to this shim.
import { register } from 'node:module';
register('./loader.mjs', import.meta.url);
