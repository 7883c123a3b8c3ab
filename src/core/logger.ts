/**
 * The logging surface capabilities see: a subset of pino's, so a pino logger is
 * one, and tests can pass a recording fake. Fixed key vocabulary for the first
 * argument: component, ip, iface, mac, pool, claim, lease, reason, err.
 */
export interface Logger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  child(bindings: Record<string, unknown>): Logger;
}

/** A logger that drops everything; for callers that truly have nothing to say. */
export const silentLogger: Logger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
  child: () => silentLogger,
};
