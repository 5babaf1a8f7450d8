import { Inject } from '@nestjs/common';
import type { JobContext } from '../../core/handler';
import type { Json } from '../../core/job';
import type { SluiceConfig } from '../../config/config';
import { SLUICE_CONFIG } from '../../config/config.module';
import { JobHandler } from '../job-handler.decorator';
import type { JobHandlerClass } from '../handler-class';
import { HttpRequestClient } from './http-request/client';
import { parseHttpRequestPayload } from './http-request/payload';

/**
 * Built-in `http.request` (API.md "Built-in http.request handler"): calls a
 * webhook `{ method, url, headers?, body?, timeoutMs? }` and returns
 * `{ status, headers, body, truncated }` on a 2xx. 5xx, timeouts and
 * connection errors fail the attempt (retried with backoff); other statuses,
 * a 4th redirect, a bad payload and an address refused by the SSRF policy
 * (core/address-policy) are unrecoverable. Hosts in HTTP_HANDLER_ALLOW_HOSTS
 * may resolve to private addresses. Always registered.
 */
@JobHandler('http.request')
export class HttpRequestHandler implements JobHandlerClass {
  private readonly client: HttpRequestClient;

  constructor(@Inject(SLUICE_CONFIG) config: SluiceConfig) {
    this.client = new HttpRequestClient({ allowHosts: config.httpHandlerAllowHosts });
  }

  async handle(payload: Record<string, Json>, ctx: JobContext): Promise<Json> {
    const spec = parseHttpRequestPayload(payload);
    const result = await this.client.execute(spec, ctx.signal, (line) => ctx.log(line));
    return { ...result };
  }
}
