import { AsyncResource } from 'node:async_hooks';

let installed = false;

/**
 * Replaces `AsyncResource.prototype.bind` with an equivalent that skips the
 * deprecated `asyncResource` accessor on the bound function.
 *
 * Why: Fastify binds one callback per request body (`content-type-parser`
 * run → `resource.bind(onDone)`), and Node 20's `bind` attaches that
 * accessor through two fresh `util.deprecate` wrappers on every call
 * (DEP0172). In a V8 profile of `POST /jobs` those wrappers were ~8 % of the
 * server's busy time. The bound function behaves the same: it runs `fn` in
 * the resource's async scope (so AsyncLocalStorage and async_hooks see the
 * context the resource was created in), with `this` as given or as called.
 * Only the deprecated `bound.asyncResource` property is absent.
 *
 * Installed only when the running Node attaches the accessor (detected, not
 * assumed from the version); idempotent.
 * @returns true when the replacement is active.
 */
export function installLeanAsyncBind(): boolean {
  if (installed) return true;
  const probe = new AsyncResource('sluice-probe').bind(() => undefined);
  if (!Object.getOwnPropertyDescriptor(probe, 'asyncResource')) return false;
  AsyncResource.prototype.bind = function bind<Func extends (...args: any[]) => any>(
    this: AsyncResource,
    fn: Func,
    thisArg?: unknown,
  ): Func {
    if (typeof fn !== 'function') throw new TypeError('The "fn" argument must be of type function');
    return leanBind(this, fn, thisArg);
  };
  installed = true;
  return true;
}

function leanBind<Func extends (...args: any[]) => any>(
  resource: AsyncResource,
  fn: Func,
  thisArg: unknown,
): Func {
  const bound =
    thisArg === undefined
      ? function (this: unknown, ...args: unknown[]) {
          return resource.runInAsyncScope(fn, this, ...args);
        }
      : (...args: unknown[]) => resource.runInAsyncScope(fn, thisArg, ...args);
  Object.defineProperty(bound, 'length', {
    configurable: true,
    enumerable: false,
    value: fn.length,
    writable: false,
  });
  return bound as unknown as Func;
}
