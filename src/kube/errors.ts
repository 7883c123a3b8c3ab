/**
 * API server failures as typed errors. Conflicts, AlreadyExists and NotFound are
 * transient (re-read and try again settles them); Forbidden and Invalid are
 * terminal (a person must change RBAC or the object); 410 Gone tells a watcher
 * to relist. Every error keeps the server's own message.
 */
import { TerminalError, TransientError } from '../core/errors.js';
import type { KubeStatus } from './types.js';

export interface KubeErrorDetails {
  readonly statusCode: number;
  readonly reason: string;
  readonly verb: string;
  readonly path: string;
}

function messageOf(d: KubeErrorDetails, status: KubeStatus | undefined): string {
  const server = status?.message ?? d.reason;
  return `${d.verb} ${d.path}: ${d.statusCode} ${server}`;
}

export class NotFoundError extends TransientError {
  override readonly name = 'NotFoundError';
  constructor(readonly details: KubeErrorDetails, readonly status?: KubeStatus) {
    super(messageOf(details, status));
  }
}
export class ConflictError extends TransientError {
  override readonly name = 'ConflictError';
  constructor(readonly details: KubeErrorDetails, readonly status?: KubeStatus) {
    super(messageOf(details, status));
  }
}
export class AlreadyExistsError extends TransientError {
  override readonly name = 'AlreadyExistsError';
  constructor(readonly details: KubeErrorDetails, readonly status?: KubeStatus) {
    super(messageOf(details, status));
  }
}
/** 410: the resourceVersion asked for is older than etcd keeps. Watchers relist. */
export class GoneError extends TransientError {
  override readonly name = 'GoneError';
  constructor(readonly details: KubeErrorDetails, readonly status?: KubeStatus) {
    super(messageOf(details, status));
  }
}
/** 5xx, 429, timeouts and refused connections: the server is away or busy. */
export class ApiUnavailableError extends TransientError {
  override readonly name = 'ApiUnavailableError';
  constructor(readonly details: KubeErrorDetails, readonly status?: KubeStatus, options?: ErrorOptions) {
    super(messageOf(details, status), options);
  }
}
/** 401/403: the ServiceAccount lacks a permission; the message names the verb and resource. */
export class ForbiddenError extends TerminalError {
  override readonly name = 'ForbiddenError';
  constructor(readonly details: KubeErrorDetails, readonly status?: KubeStatus) {
    super(messageOf(details, status));
  }
}
/** 400/422 and other 4xx: the object is rejected by validation; retrying the same body will not help. */
export class InvalidError extends TerminalError {
  override readonly name = 'InvalidError';
  constructor(readonly details: KubeErrorDetails, readonly status?: KubeStatus) {
    super(messageOf(details, status));
  }
}

export type KubeError =
  | NotFoundError
  | ConflictError
  | AlreadyExistsError
  | GoneError
  | ApiUnavailableError
  | ForbiddenError
  | InvalidError;

/** Maps an HTTP status (and the Status body, when there is one) to the typed error. */
export function kubeErrorFor(details: KubeErrorDetails, status?: KubeStatus): KubeError {
  const code = details.statusCode;
  if (code === 404) return new NotFoundError(details, status);
  if (code === 409) {
    return status?.reason === 'AlreadyExists' ? new AlreadyExistsError(details, status) : new ConflictError(details, status);
  }
  if (code === 410) return new GoneError(details, status);
  if (code === 401 || code === 403) return new ForbiddenError(details, status);
  if (code === 429 || code >= 500 || code === 0) return new ApiUnavailableError(details, status);
  return new InvalidError(details, status);
}

export function isNotFound(err: unknown): err is NotFoundError {
  return err instanceof NotFoundError;
}
export function isConflict(err: unknown): err is ConflictError {
  return err instanceof ConflictError;
}
export function isAlreadyExists(err: unknown): err is AlreadyExistsError {
  return err instanceof AlreadyExistsError;
}
