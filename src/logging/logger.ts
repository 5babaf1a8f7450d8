import pino, { Logger } from 'pino';

/**
 * Whether this process logs pretty lines: stdout is a TTY and NODE_ENV is
 * not `production`. A worker thread cannot tell (its process.stdout is never
 * a TTY): it is handed its parent's answer (src/audit/writer-thread.ts).
 */
export function prettyLogs(): boolean {
  return !!process.stdout.isTTY && process.env.NODE_ENV !== 'production';
}

/**
 * The process logger: JSON lines in production, pretty when stdout is a TTY.
 * Payload values are never logged by Sluice code; log ids, sizes and keys.
 * @param pretty pino-pretty (true) or JSON lines (false); the default is prettyLogs().
 */
export function createLogger(level: string, name = 'sluice', pretty = prettyLogs()): Logger {
  return pino({
    name,
    level,
    base: { pid: process.pid },
    ...(pretty ? { transport: { target: 'pino-pretty', options: { colorize: true, translateTime: 'SYS:HH:MM:ss.l' } } } : {}),
  });
}

export type { Logger };
