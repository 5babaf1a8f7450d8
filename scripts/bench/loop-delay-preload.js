/*
 * Preloaded into a server by scripts/bench/bodies.js (NODE_OPTIONS=--require):
 * records the event loop's delay (perf_hooks, 10 ms resolution); on SIGUSR2
 * writes "loop delay max <ms> ms p99 <ms> ms" to stdout and starts over.
 */
const { monitorEventLoopDelay } = require('node:perf_hooks');

const h = monitorEventLoopDelay({ resolution: 10 });
h.enable();
process.on('SIGUSR2', () => {
  process.stdout.write(`loop delay max ${Math.round(h.max / 1e6)} ms p99 ${Math.round(h.percentile(99) / 1e6)} ms\n`);
  h.reset();
});
