import { expect } from 'chai';
import { TerminalError, TransientError, retryPolicyFor } from '../../src/core/errors.js';
import {
  AlreadyExistsError,
  ApiUnavailableError,
  ConflictError,
  ForbiddenError,
  GoneError,
  InvalidError,
  NotFoundError,
  kubeErrorFor,
} from '../../src/kube/errors.js';

describe('kubeErrorFor', () => {
  const cases: [number, string | undefined, new (...a: never[]) => Error, 'retry' | 'waitForChange'][] = [
    [404, 'NotFound', NotFoundError, 'retry'],
    [409, 'Conflict', ConflictError, 'retry'],
    [409, 'AlreadyExists', AlreadyExistsError, 'retry'],
    [410, 'Expired', GoneError, 'retry'],
    [401, 'Unauthorized', ForbiddenError, 'waitForChange'],
    [403, 'Forbidden', ForbiddenError, 'waitForChange'],
    [422, 'Invalid', InvalidError, 'waitForChange'],
    [400, 'BadRequest', InvalidError, 'waitForChange'],
    [429, 'TooManyRequests', ApiUnavailableError, 'retry'],
    [500, 'InternalError', ApiUnavailableError, 'retry'],
    [503, 'ServiceUnavailable', ApiUnavailableError, 'retry'],
    [0, undefined, ApiUnavailableError, 'retry'],
  ];
  for (const [code, reason, type, policy] of cases) {
    it(`${code} ${reason ?? '(no answer)'} → ${type.name}, ${policy}`, () => {
      const err = kubeErrorFor({ statusCode: code, reason: 'x', verb: 'PUT', path: '/apis/a/v1/b' }, { reason, message: 'server says why' });
      expect(err).to.be.instanceOf(type);
      expect(retryPolicyFor(err)).to.equal(policy);
      expect(err).to.be.instanceOf(policy === 'retry' ? TransientError : TerminalError);
      expect(err.message).to.equal(`PUT /apis/a/v1/b: ${code} server says why`);
    });
  }
});
