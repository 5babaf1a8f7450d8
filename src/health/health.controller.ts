import { Controller, Get } from '@nestjs/common';

/** Liveness: 200 while the process runs (API.md `GET /healthz`). */
@Controller()
export class HealthController {
  @Get('healthz')
  healthz(): { status: 'ok' } {
    return { status: 'ok' };
  }
}
