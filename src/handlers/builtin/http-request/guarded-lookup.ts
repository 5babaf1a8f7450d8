import { lookup as dnsLookup } from 'node:dns/promises';
import type { LookupFunction } from 'node:net';
import { isIP } from 'node:net';
import type { AddressVerdict } from '../../../core/address-policy';
import { UnrecoverableError } from '../../../core/handler';

/** One address of a DNS answer. */
export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to every address it has (never called for IP literals). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

/** Judges one address as a connect target (default: core/address-policy checkAddress). */
export type AddressCheck = (ip: string) => AddressVerdict;

/** The system resolver (getaddrinfo, hosts file included), every address, in its order. */
export const systemResolver: Resolver = async (hostname) =>
  (await dnsLookup(hostname, { all: true, verbatim: true })).map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));

/**
 * The address policy refused where a job asked to connect. Unrecoverable: the
 * same URL will be refused again. The message (the job's `lastError`, shown
 * to whoever reads the job) names the host as given and says the policy
 * refused it — never the resolved address nor its class (loopback, private,
 * link-local…): either would let a caller map the internal network by
 * probing names (API.md v1.2). The rule stays on the error for the server.
 */
export class AddressRefusedError extends UnrecoverableError {
  constructor(
    host: string,
    /** The range that refused it (e.g. `loopback (127.0.0.0/8)`): for the server's tests and logs, not the message. */
    readonly rule: string,
  ) {
    super(`http.request: refused to connect to ${host}: refused by the address policy`);
  }
}

/**
 * A `lookup` for net/tls connect that resolves once, keeps only the addresses
 * `check` allows (all of them when `exempt`, i.e. an HTTP_HANDLER_ALLOW_HOSTS
 * host) and hands exactly those to the socket. The address checked is
 * therefore the address connected to: there is no second lookup a changed
 * DNS answer could slip through. Fails with AddressRefusedError when nothing
 * is left.
 */
export function guardedLookup(displayHost: string, exempt: boolean, resolve: Resolver, check: AddressCheck): LookupFunction {
  return (hostname, options, callback) => {
    const cb = callback as (err: NodeJS.ErrnoException | null, address: string | ResolvedAddress[], family?: number) => void;
    resolve(hostname).then(
      (answer) => {
        const family = options.family === 4 || options.family === 6 ? options.family : 0;
        const candidates = answer.filter((a) => isIP(a.address) === a.family && (family === 0 || a.family === family));
        if (candidates.length === 0) {
          const err: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${displayHost}`);
          err.code = 'ENOTFOUND';
          return cb(err, '');
        }
        let refusedRule = '';
        const allowed = exempt
          ? candidates
          : candidates.filter((a) => {
              const v = check(a.address);
              if (!v.allowed && !refusedRule) refusedRule = v.rule;
              return v.allowed;
            });
        if (allowed.length === 0) return cb(new AddressRefusedError(displayHost, refusedRule), '');
        if (options.all) return cb(null, allowed);
        cb(null, allowed[0].address, allowed[0].family);
      },
      (err: NodeJS.ErrnoException) => cb(err, ''),
    );
  };
}
