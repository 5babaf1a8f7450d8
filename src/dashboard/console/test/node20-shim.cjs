/* eslint-disable @typescript-eslint/no-require-imports, no-undef -- a CommonJS file Node preloads (--require) */
/*
 * jsdom 31 (through undici 8) wants Node >= 22: at load it binds
 * zlib.createZstdDecompress, which Node 20 lacks. The component tests never
 * receive zstd bodies (their fetch is a fake), so on Node 20 a stub that
 * refuses to run is enough. On Node 22+ this file changes nothing.
 */
const zlib = require('node:zlib');
if (typeof zlib.createZstdDecompress !== 'function') {
  zlib.createZstdDecompress = function createZstdDecompress() {
    throw new Error('zstd is not available on this Node version');
  };
}
// The same for worker_threads.markAsUncloneable (Node 22.10+): undici only marks its objects with it.
const wt = require('node:worker_threads');
if (typeof wt.markAsUncloneable !== 'function') wt.markAsUncloneable = function markAsUncloneable() {};
// Iterator helpers (ES2025, Node 22): jsdom walks trees with them. Generator-based stand-ins for Node 20,
// installed here and in every vm context jsdom makes (its window is one).
function installIteratorHelpers() {
  if (typeof globalThis.Iterator !== 'undefined') return;
  const IteratorProto = Object.getPrototypeOf(Object.getPrototypeOf([][Symbol.iterator]()));
  function Iterator() {}
  Iterator.prototype = IteratorProto;
  Iterator.from = (it) => (typeof it.next === 'function' ? it : it[Symbol.iterator]());
  const def = (name, fn) => Object.defineProperty(IteratorProto, name, { value: fn, writable: true, configurable: true });
  def('map', function* (f) { let i = 0; for (const v of this) yield f(v, i++); });
  def('filter', function* (f) { let i = 0; for (const v of this) if (f(v, i++)) yield v; });
  def('flatMap', function* (f) { let i = 0; for (const v of this) yield* f(v, i++); });
  def('take', function* (n) { if (n <= 0) return; let i = 0; for (const v of this) { yield v; if (++i >= n) return; } });
  def('drop', function* (n) { let i = 0; for (const v of this) if (i++ >= n) yield v; });
  def('toArray', function () { return [...this]; });
  def('forEach', function (f) { let i = 0; for (const v of this) f(v, i++); });
  def('some', function (f) { let i = 0; for (const v of this) if (f(v, i++)) return true; return false; });
  def('every', function (f) { let i = 0; for (const v of this) if (!f(v, i++)) return false; return true; });
  def('find', function (f) { let i = 0; for (const v of this) if (f(v, i++)) return v; return undefined; });
  def('reduce', function (f, ...init) { let i = 0; let acc; let first = init.length === 0; if (!first) acc = init[0]; for (const v of this) { if (first) { acc = v; first = false; } else acc = f(acc, v, i); i++; } return acc; });
  Object.defineProperty(globalThis, 'Iterator', { value: Iterator, writable: true, configurable: true });
}
if (typeof globalThis.Iterator === 'undefined') {
  installIteratorHelpers();
  const vm = require('node:vm');
  const createContext = vm.createContext;
  vm.createContext = function (...args) {
    const ctx = createContext.apply(this, args);
    vm.runInContext(`(${installIteratorHelpers.toString()})()`, ctx);
    return ctx;
  };
}
