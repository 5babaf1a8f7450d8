import { AsyncLocalStorage, AsyncResource } from 'node:async_hooks';
import { installLeanAsyncBind } from './lean-async-bind';

describe('installLeanAsyncBind', () => {
  const als = new AsyncLocalStorage<string>();
  beforeAll(() => installLeanAsyncBind());

  it('drops the deprecated accessor (no per-call deprecate wrappers)', () => {
    const bound = new AsyncResource('t').bind(() => 1);
    expect(Object.getOwnPropertyDescriptor(bound, 'asyncResource')).toBeUndefined();
  });

  it('runs the function in the async context the resource was created in', async () => {
    const bound = als.run('request-a', () => new AsyncResource('t').bind(() => als.getStore()));
    // Called from another context (as Fastify calls `done` from a stream callback).
    const seen = await als.run(
      'request-b',
      () => new Promise((r) => setImmediate(() => r(bound()))),
    );
    expect(seen).toBe('request-a');
  });

  it('keeps this, arguments, return value, length and thrown errors', () => {
    const r = new AsyncResource('t');
    function f(this: { k: number } | undefined, a: number, b: number) {
      return (this?.k ?? 0) + a + b;
    }
    const asCalled = r.bind(f);
    expect(asCalled.length).toBe(2);
    expect(asCalled.call({ k: 10 }, 1, 2)).toBe(13);
    // @types/node declares bind(fn) only; Node's own signature is bind(fn, thisArg).
    const bindWithThis = r.bind.bind(r) as unknown as (fn: typeof f, thisArg: unknown) => (a: number, b: number) => number;
    expect(bindWithThis(f, { k: 100 })(1, 2)).toBe(103);
    expect(() =>
      r.bind(() => {
        throw new Error('boom');
      })(),
    ).toThrow('boom');
    // By message: node core modules are shared across jest's per-file realms, so the
    // replacement may come from another test file (another realm's TypeError).
    expect(() => r.bind(42 as never)).toThrow('"fn" argument must be of type function');
  });

  it('is what AsyncResource.bind (static) uses too', () => {
    const bound = als.run('static', () => AsyncResource.bind(() => als.getStore()));
    expect(bound()).toBe('static');
  });
});
