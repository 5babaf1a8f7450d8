import { SetMetadata } from '@nestjs/common';
import type { Requirement } from '../core/access';

/** Metadata key under which a route handler's requirement is stored. */
export const ACCESS_METADATA = 'sluice:access';

/**
 * Declares who may call a route (API.md v1.1 roles): every route handler
 * carries exactly one `@Access(...)`, read by the one guard
 * (src/auth/auth.guard.ts) and by the route table the tests enumerate. A
 * route without it stops the process at boot (src/http/route-table.ts).
 * Several requirements mean any of them, e.g. `@Access('viewer', 'producer')`.
 */
export const Access = (...required: [Requirement, ...Requirement[]]): MethodDecorator & ClassDecorator => SetMetadata(ACCESS_METADATA, required);
