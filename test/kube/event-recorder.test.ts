import { expect } from 'chai';
import { silentLogger } from '../../src/core/logger.js';
import { AlreadyExistsError } from '../../src/kube/errors.js';
import { EventRecorder, type EventObject } from '../../src/kube/event-recorder.js';
import type { ResourceClient } from '../../src/kube/resource-client.js';
import { FakeClock } from '../support/fake-clock.js';

/** A client whose create takes each name once, as the API server does. */
function client(): { c: ResourceClient<EventObject>; names: Set<string>; created: EventObject[] } {
  const names = new Set<string>();
  const created: EventObject[] = [];
  const c = {
    create: (o: EventObject) => {
      const name = o.metadata.name ?? '';
      if (names.has(name)) return Promise.reject(new AlreadyExistsError({ statusCode: 409, reason: 'AlreadyExists', verb: 'POST', path: '/events' }, { reason: 'AlreadyExists' }));
      names.add(name);
      created.push(o);
      return Promise.resolve(o);
    },
    mergePatch: () => Promise.resolve({} as EventObject),
  } as unknown as ResourceClient<EventObject>;
  return { c, names, created };
}

describe('kube/event-recorder', () => {
  it('recorders of several agents naming Events for one object in the same millisecond lose none', async () => {
    const { c, created } = client();
    const clock = new FakeClock();
    const regarding = { apiVersion: 'ironet.io/v1alpha1', kind: 'ProvisioningNetwork', metadata: { name: 'provisioning', namespace: 'metal3', uid: 'u1' } };
    const recorders = Array.from({ length: 20 }, (_, i) => new EventRecorder(c, { controller: 'ironet.io/agent', instance: `node-${i}`, clock, logger: silentLogger }));
    await Promise.all(recorders.map((r, i) => r.record(regarding, { type: 'Warning', reason: 'ParentInterfaceMissing', action: 'Attach', note: `node-${i}` })));
    expect(created.map((e) => e.note).sort()).to.have.length(20);
    expect(new Set(created.map((e) => e.metadata.name)).size).to.equal(20);
  });
});
