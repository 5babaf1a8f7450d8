import { state } from './state.mjs';
/** k6's Counter: add() sums per name. */
export class Counter {
  constructor(name) {
    this.name = name;
    state.counters[name] ??= 0;
  }
  add(n) {
    state.counters[this.name] += n;
  }
}
