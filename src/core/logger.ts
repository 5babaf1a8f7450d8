/**
 * The logger shape framework-free code takes (pino's loggers have it: see
 * src/logging/logger.ts). Messages never carry payload values or secrets.
 */
export interface Logger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

/** A logger that drops everything (the default where logging is optional). */
export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };
