/**
 * The real Metal3 controllers as peers on the integration tier's API server
 * (src/lab/rig/metal3-peers.ts): baremetal-operator with its fixture
 * provisioner, ip-address-manager and cluster-api-provider-metal3 with their
 * admission webhooks registered against the local process. Their CRDs are
 * installed once with the tier's (crdManifests). Each watches only the test's
 * namespace (every peer has a --namespace flag), and runs as its own
 * ServiceAccount bound to the ClusterRoles of its own manifests.
 *
 * Webhook configurations are cluster-wide, as upstream registers them: while
 * ip-address-manager or CAPM3 runs, their webhooks check every write of their
 * kinds in every namespace. Mocha runs one test at a time, and stop()
 * unregisters them, so tests of other files never meet them.
 *
 * A missing prerequisite (Go, the upstream sources) fails the test with how
 * to install it; it is never a skip.
 */
import { tmpdir } from 'node:os';
import path from 'node:path';
import { systemClock } from '../../src/core/clock.js';
import type { Metal3PeerName } from '../../src/lab/metal3-peer-plan.js';
import { startMetal3Peer, type Metal3Peer, type Metal3PeerOptions } from '../../src/lab/rig/metal3-peers.js';
import { ensureUpstream } from '../../src/lab/rig/upstream-builds.js';
import { testCluster } from './cluster.js';

export type PeerOptions = Pick<Metal3PeerOptions, 'namespace' | 'webhooks' | 'extraArgs' | 'startTimeoutMs' | 'ironic'>;

const running = new Set<Metal3Peer>();
let exitHook: (() => void) | undefined;

/** Starts `peer` against the test cluster (built first if needed: minutes the first time). */
export async function startPeer(peer: Metal3PeerName, options: PeerOptions = {}): Promise<Metal3Peer> {
  const { apiserver, admin } = testCluster();
  const started = await startMetal3Peer({
    peer,
    admin,
    server: apiserver.server,
    caPem: apiserver.caPem,
    runRoot: path.join(tmpdir(), 'ironet-run'),
    clock: systemClock,
    build: await ensureUpstream(peer, 'binary'),
    ...options,
  });
  running.add(started);
  if (!exitHook) {
    exitHook = () => {
      for (const p of running) p.killNow();
    };
    process.once('exit', exitHook);
  }
  return started;
}

/**
 * Stops a peer started by startPeer (process, webhook configurations, RBAC,
 * run folder and log); a no-op for undefined. Given the mocha context of an
 * afterEach hook whose test failed, it prints the end of the peer's log first.
 */
export async function stopPeer(peer: Metal3Peer | undefined, ctx?: Mocha.Context): Promise<void> {
  if (!peer) return;
  await printLogIfFailed(peer, ctx);
  running.delete(peer);
  await peer.stop();
}

/** Prints the end of the peer's log when the current test of an afterEach hook failed. */
export async function printLogIfFailed(peer: Metal3Peer | undefined, ctx?: Mocha.Context): Promise<void> {
  if (!peer || ctx?.currentTest?.state !== 'failed') return;
  console.log(`\n  --- the end of ${peer.name}'s log (${peer.logFile}) ---\n${await peer.logTail(60)}\n  ---`);
}

/**
 * Mocha hooks for a `describe`: the peer starts before its first test (in the
 * namespace `namespace()` returns at that time) and stops after its last.
 * Returns a getter for the running peer.
 */
export function peerForSuite(peer: Metal3PeerName, options: () => PeerOptions): () => Metal3Peer {
  let current: Metal3Peer | undefined;
  before(async function () {
    this.timeout(15 * 60_000); // a cold build of the peer, when setup did not build it
    current = await startPeer(peer, options());
  });
  afterEach(async function () {
    await printLogIfFailed(current, this);
  });
  after(async function () {
    this.timeout(60_000);
    await stopPeer(current);
    current = undefined;
  });
  return () => {
    if (!current) throw new Error(`${peer} is not running (its before hook failed)`);
    return current;
  };
}
