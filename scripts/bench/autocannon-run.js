/*
 * One autocannon measurement in a child process of its own, so the load
 * generator does not share an event loop with the orchestrator (http.js,
 * pipeline.js). run(o) forks this file with the autocannon options as JSON;
 * the child runs them and sends back a summary over IPC.
 */
const { fork } = require('node:child_process');

/**
 * @param o autocannon options (url, connections, duration, method, headers, body, …)
 * @returns {Promise<{rps, total, p50, p99, non2xx, errors, timeouts, statusCodes}>}
 */
function run(o) {
  return new Promise((res, rej) => {
    const child = fork(__filename, [JSON.stringify(o)], { stdio: 'inherit' });
    child.once('message', (m) => (m.error ? rej(new Error(m.error)) : res(m)));
    child.once('exit', (code) => code && rej(new Error(`load generator exited ${code}`)));
  });
}

if (require.main === module) {
  const autocannon = require('autocannon');
  autocannon(JSON.parse(process.argv[2]), (err, r) => {
    if (err) {
      process.send({ error: err.message });
    } else {
      process.send({
        rps: r.requests.average,
        total: r.requests.total,
        p50: r.latency.p50,
        p99: r.latency.p99,
        non2xx: r.non2xx,
        errors: r.errors,
        timeouts: r.timeouts,
        statusCodes: r.statusCodeStats,
      });
    }
    process.exit(0);
  });
}

module.exports = { run };
