import { RequestMethod, type INestApplicationContext } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA, ROUTE_ARGS_METADATA } from '@nestjs/common/constants';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum';
import { ModulesContainer } from '@nestjs/core';
import type { Requirement } from '../core/access';
import { ACCESS_METADATA } from './access.decorator';
import { AUDIT_METADATA, type AuditDeclaration } from './audited.decorator';

/** One HTTP route of the app with its access declaration (null = none: a bug the boot check refuses). */
export interface RouteAccess {
  method: string;
  /** Fastify form, e.g. `/jobs/:id`. */
  path: string;
  required: readonly Requirement[] | null;
  /** `Controller.method`, for messages. */
  handler: string;
  /** Its operator-audit declaration (`@Audited` / `@NotAudited`), null = none. */
  audit: AuditDeclaration | null;
  /** Whether the handler reads a body (`@Body`): a route that does not takes none, or `{}` (src/server/http-app.ts refuses any other). */
  takesBody: boolean;
}

/** Whether a handler of `ctor` has a `@Body()` parameter (Nest keeps them as `<RouteParamtypes>:<index>` keys). */
export function readsBody(ctor: object, name: string): boolean {
  const args = (Reflect.getMetadata(ROUTE_ARGS_METADATA, ctor, name) ?? {}) as Record<string, unknown>;
  return Object.keys(args).some((k) => k.split(':')[0] === String(RouteParamtypes.BODY));
}

function joinPath(base: string, sub: string): string {
  const parts = [base, sub].map((p) => p.replace(/^\/+|\/+$/g, '')).filter(Boolean);
  return '/' + parts.join('/');
}

/**
 * Every route of the Nest controllers in `app` with its `@Access`
 * declaration (handler's, else its controller's): the table the guard
 * applies and the tests enumerate (test/e2e/auth-matrix.test.ts compares it
 * with the live Fastify router).
 */
export function routeTable(app: INestApplicationContext): RouteAccess[] {
  const out: RouteAccess[] = [];
  const seen = new Set<unknown>();
  for (const mod of app.get(ModulesContainer).values()) {
    for (const wrapper of mod.controllers.values()) {
      const ctor = wrapper.metatype as (new (...a: unknown[]) => unknown) | undefined;
      if (!ctor || seen.has(ctor)) continue;
      seen.add(ctor);
      const bases = ([] as string[]).concat(Reflect.getMetadata(PATH_METADATA, ctor) ?? '/');
      const classReq = Reflect.getMetadata(ACCESS_METADATA, ctor) as Requirement[] | undefined;
      const proto = ctor.prototype as Record<string, unknown>;
      for (const name of Object.getOwnPropertyNames(proto)) {
        if (name === 'constructor' || typeof proto[name] !== 'function') continue;
        const fn = proto[name] as object;
        const subs = Reflect.getMetadata(PATH_METADATA, fn) as string | string[] | undefined;
        const m = Reflect.getMetadata(METHOD_METADATA, fn) as RequestMethod | undefined;
        if (subs === undefined || m === undefined) continue;
        const required = (Reflect.getMetadata(ACCESS_METADATA, fn) as Requirement[] | undefined) ?? classReq ?? null;
        const audit = (Reflect.getMetadata(AUDIT_METADATA, fn) as AuditDeclaration | undefined) ?? null;
        const takesBody = readsBody(ctor, name);
        for (const base of bases) {
          for (const sub of ([] as string[]).concat(subs)) {
            out.push({ method: RequestMethod[m], path: joinPath(base, sub), required, handler: `${ctor.name}.${name}`, audit, takesBody });
          }
        }
      }
    }
  }
  return out;
}

/**
 * Boot check: every route declares who may call it.
 * @throws Error naming each undeclared route (the process does not start).
 */
export function assertEveryRouteDeclared(app: INestApplicationContext): void {
  const missing = routeTable(app).filter((r) => !r.required);
  if (missing.length) {
    throw new Error(`routes without an @Access declaration: ${missing.map((r) => `${r.method} ${r.path} (${r.handler})`).join(', ')}`);
  }
}
