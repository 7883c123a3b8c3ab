/**
 * Mocha root hooks for the integration tier: one real API server for the run,
 * torn down after the last test, on failure, and on Ctrl-C.
 */
import { startTestCluster, stopTestCluster } from './cluster.js';

let killOnExit: (() => void) | undefined;

export const mochaHooks = {
  async beforeAll(this: Mocha.Context): Promise<void> {
    this.timeout(15 * 60_000); // the first run builds the API server if setup did not
    const started = Date.now();
    const c = await startTestCluster();
    killOnExit = () => c.apiserver.killNow();
    process.once('exit', killOnExit);
    for (const sig of ['SIGINT', 'SIGTERM'] as const) {
      process.once(sig, () => {
        c.apiserver.killNow();
        process.exit(130);
      });
    }
    console.log(`  (API server ${c.apiserver.server} ready in ${((Date.now() - started) / 1000).toFixed(1)}s, ${c.crds.length} CRDs installed)`);
  },
  async afterAll(this: Mocha.Context): Promise<void> {
    this.timeout(60_000);
    await stopTestCluster(); // a no-op when the start failed (that failure is already reported)
    if (killOnExit) process.removeListener('exit', killOnExit);
  },
};
