/** What the shim records while the script runs: checks by name, counters by name, requests by tag. */
export const state = { checks: {}, counters: {}, requests: {}, iteration: 0, vu: 1 };
