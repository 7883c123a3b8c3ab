/**
 * Composition root of `ironet dev` (`npm run dev`, no root needed): a real
 * etcd + kube-apiserver on loopback, every CRD installed, a kubeconfig written
 * for the user, and `ironet controller` running against it until Ctrl-C, which
 * tears everything down. `ironet lab` (cmd/lab.ts) is the whole picture.
 */
import { existsSync } from 'node:fs';
import { copyFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { DevConfig } from '../config/tools.js';
import { systemClock } from '../core/clock.js';
import { describeError } from '../core/errors.js';
import type { KubeObject } from '../core/object-meta.js';
import { CHECKOUT } from '../lab/rig/checkout.js';
import { ensureApiServerBinaries, startLocalApiServer } from '../lab/rig/local-apiserver.js';
import { connectWithToken } from '../kube/kube-client.js';
import { createMissing, installCrds, loadManifests } from '../kube/manifests.js';
import { waitForSampleClaims, waitForSampleNetwork, waitForSampleNetworkData } from '../lab/world/dev-samples.js';
import { createLogger } from '../log/logger.js';
import { runController } from './controller.js';
import { upstreamCrdDirs } from '../lab/rig/upstream-builds.js';
import { cacheDir, shutdownSignal, upstreamCrdOverride, type RunContext } from './runtime.js';


export async function runDev(config: DevConfig, ctx: RunContext): Promise<number> {
  const logger = createLogger({ level: config.logLevel, format: config.logFormat, component: 'dev' });
  const signal = shutdownSignal();
  const crdOverride = upstreamCrdOverride(ctx.env);
  const started = performance.now();

  logger.info({}, 'starting etcd and kube-apiserver');
  const binDir = await ensureApiServerBinaries(CHECKOUT);
  const apiserver = await startLocalApiServer({ binDir, runRoot: path.join(cacheDir(ctx.env), 'run'), clock: systemClock });
  const killOnExit = (): void => apiserver.killNow();
  process.once('exit', killOnExit);
  try {
    const kube = connectWithToken(apiserver.server, apiserver.adminToken, apiserver.caPem);
    // the upstream CRDs from their pinned sources (the Metal3 peers', CAPI core's, the NAD's; no compiler run), and ironet's own
    const manifests: KubeObject[] = [];
    for (const dir of crdOverride ?? (await upstreamCrdDirs())) manifests.push(...(await loadManifests(dir)));
    const ownCrds = path.join(CHECKOUT, 'charts/ironet/crds');
    if (existsSync(ownCrds)) manifests.push(...(await loadManifests(ownCrds)));
    const crds = await installCrds(kube, manifests, { clock: systemClock, signal });
    const kubeconfig = path.join(cacheDir(ctx.env), 'dev', 'kubeconfig');
    await mkdir(path.dirname(kubeconfig), { recursive: true });
    await copyFile(apiserver.kubeconfigPath, kubeconfig);
    const kubectl = path.join(binDir, 'kubectl');
    const seconds = ((performance.now() - started) / 1000).toFixed(1);

    console.log(
      [
        '',
        `ironet dev: a local Kubernetes API server is up (${seconds}s) with ${crds.length} CRDs installed.`,
        '',
        `  export KUBECONFIG=${kubeconfig}`,
        `  alias kubectl=${kubectl}     # built with the API server, if you have none`,
        '  kubectl get crds',
        '  kubectl api-resources --api-group=ipam.metal3.io',
        '',
        `Metrics and health: http://127.0.0.1:${config.metricsPort}/metrics  /healthz  /readyz`,
        'Press Ctrl-C to stop and remove everything.',
        '',
      ].join('\n'),
    );

    const showSample = async (): Promise<void> => {
      const sample = path.join(CHECKOUT, 'examples/dev/ipam.yaml');
      const netdataSample = path.join(CHECKOUT, 'examples/dev/netdata.yaml');
      await createMissing(kube, await loadManifests(sample), signal);
      await createMissing(kube, await loadManifests(netdataSample), signal);
      const rows = [...(await waitForSampleClaims(kube, systemClock, signal)), ...(await waitForSampleNetwork(kube, systemClock, signal)), ...(await waitForSampleNetworkData(kube, systemClock, signal))];
      console.log(
        [
          '',
          `Applied ${path.relative(process.cwd(), sample)} and ${path.relative(process.cwd(), netdataSample)}; the controller allocated and generated:`,
          '',
          ...rows.map(([kind, name, result]) => `  ${kind.padEnd(20)} ${name.padEnd(24)} ${result}`),
          '',
          '  kubectl get ipclaims,ipaddresses.ipam.metal3.io,ipaddressclaims.ipam.cluster.x-k8s.io -n metal3',
          '  # (plain "ipaddresses" is the built-in networking.k8s.io kind since Kubernetes 1.33)',
          '  kubectl get ippool provisioning -n metal3 -o yaml        # status.indexes',
          `  curl -s http://127.0.0.1:${config.metricsPort}/metrics | grep ironet_ipam_pool_addresses`,
          '  kubectl get provisioningnetworks,network-attachment-definitions -n metal3 -o wide',
          '  kubectl get networkdatatemplates -n metal3; kubectl get secret dhcpless-0-preprov-networkdata -n metal3 -o jsonpath={.data.networkData} | base64 -d',
          '',
        ].join('\n'),
      );
    };

    const code = await runController(
      {
        command: 'controller',
        logLevel: config.logLevel,
        logFormat: config.logFormat,
        kubeconfig,
        context: undefined,
        namespace: undefined,
        metricsHost: '127.0.0.1',
        metricsPort: config.metricsPort,
        podName: 'ironet-dev',
        ipamBatchSize: 500,
        ipamWriteConcurrency: 32, noAgentGraceSeconds: 60, secondPodGraceSeconds: 120,
      },
      {
        ...ctx,
        signal,
        kube,
        logger: createLogger({ level: config.logLevel, format: config.logFormat, component: 'controller' }),
        onReady: () => {
          showSample().catch((err: unknown) => {
            if (!signal.aborted) logger.error({ err: describeError(err) }, 'could not apply the sample');
          });
        },
      },
    );
    kube.close();
    return code;
  } finally {
    logger.info({}, 'stopping kube-apiserver and etcd');
    await apiserver.stop();
    process.removeListener('exit', killOnExit);
  }
}
