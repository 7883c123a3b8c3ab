/**
 * spec.role (issue 19, point 3) against the real controller and agents: a
 * Standby network's holder steps down and nobody takes the VIP (netlink in
 * every pod), Ready says Standby; made Active again, a Ready pod takes it.
 * Never two holders.
 */
import { expect } from 'chai';
import { RESOURCES } from '../../src/kube/resources.js';
import { eventually } from '../support/ipam-fixture.js';
import { IronicPodsLab } from '../support/ironic-pods-lab.js';
import { VIP } from '../support/vip-lab.js';

describe('a Standby ProvisioningNetwork holds no VIP; Active again, it does (system)', function () {
  this.timeout(5 * 60_000);
  const world = new IronicPodsLab({ env: { IRONIC_IP: VIP }, label: 'standby' });

  before(async function () {
    this.timeout(240_000);
    await world.start();
    await world.pods.setContainer(world.ironic[0]!, true, true);
    await world.pods.setContainer(world.ironic[1]!, true, true);
  });
  after(() => world.stop());

  const setRole = (role: 'Active' | 'Standby') => world.lab.admin.resource(RESOURCES.provisioningNetwork).mergePatch({ namespace: world.lab.namespace, name: 'provisioning' }, { spec: { role } });

  it('Active → Standby: the holder steps down, nobody takes the VIP, Ready=True Standby; → Active: a pod takes it', async () => {
    await eventually(async () => (world.holders().length === 1 ? true : undefined), 'one VIP holder while Active', 30_000);
    await setRole('Standby');
    await eventually(async () => (world.holders().length === 0 ? true : undefined), 'no holder once Standby', 30_000);
    const ready = await eventually(async () => {
      const c = await world.condition('Ready');
      return c.reason === 'Standby' ? c : undefined;
    }, 'Ready Standby', 30_000);
    expect(ready.status).to.equal('True');
    expect((await world.network()).status?.vipHolder, 'nobody named as holder').to.equal(undefined);
    // it stays silent: several retry periods later, still nobody
    await new Promise((resolve) => setTimeout(resolve, 3000));
    expect(world.holders(), 'still no holder').to.deep.equal([]);
    await setRole('Active');
    await eventually(async () => (world.holders().length === 1 ? true : undefined), 'a holder again once Active', 30_000);
    await eventually(async () => ((await world.condition('Ready')).reason !== 'Standby' ? true : undefined), 'Ready no longer Standby', 30_000);
    expect(world.lab.vip.dualHolderMs(), 'never two holders').to.equal(0);
  });
});
