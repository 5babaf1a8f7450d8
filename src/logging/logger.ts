import pino, { DestinationStream, Logger } from 'pino';
import { safeError } from './safe-error';

/**
 * Keys that hold client data on library errors or request objects: removed
 * wherever they appear at the top level or one level down, whatever logged
 * them (the `err` serializer already keeps only a whitelist of an error).
 */
const REDACT_KEYS = ['parameters', 'query', 'driverError', 'detail', 'where', 'hint', 'args', 'command', 'payload', 'body'];

/**
 * Whether this process logs pretty lines: stdout is a TTY and NODE_ENV is
 * not `production`. A worker thread cannot tell (its process.stdout is never
 * a TTY): it is handed its parent's answer (src/mirror/writer-thread.ts).
 */
export function prettyLogs(): boolean {
  return !!process.stdout.isTTY && process.env.NODE_ENV !== 'production';
}

/**
 * The process logger: JSON lines in production, pretty when stdout is a TTY.
 * Payload values are never logged by Sluice code; log ids, sizes and keys.
 * Errors logged under `err`, `error` or `reason` go through
 * {@link safeError} (no SQL parameters, no Redis command arguments, no
 * values quoted in messages), and {@link REDACT_KEYS} are censored.
 * @param pretty pino-pretty (true) or JSON lines (false); the default is prettyLogs(); never with a destination.
 * @param destination where lines go (tests capture them); stdout by default.
 */
export function createLogger(level: string, name = 'sluice', pretty = prettyLogs(), destination?: DestinationStream): Logger {
  if (destination) pretty = false;
  const options: pino.LoggerOptions = {
    name,
    level,
    base: { pid: process.pid },
    serializers: { err: safeError, error: safeError, reason: safeError },
    redact: { paths: [...REDACT_KEYS, ...REDACT_KEYS.map((k) => `*.${k}`)], censor: '[redacted]' },
    ...(pretty ? { transport: { target: 'pino-pretty', options: { colorize: true, translateTime: 'SYS:HH:MM:ss.l' } } } : {}),
  };
  return destination ? pino(options, destination) : pino(options);
}

export type { Logger };
