// @ts-check
/**
 * ESLint rules that enforce DESIGN.md's dependency direction:
 *   cmd → adapters (kube, host, metrics, log) → capabilities → core
 *   cmd → lab (the one-machine world: it uses adapters, never cmd)
 * with the capabilities in written ranks (a capability imports only lower
 * ranks, so no two import each other), plus the rule that each outside
 * surface has exactly one owner folder, and the few imports that a layer's
 * rules allow but the design does not.
 * Pure data + two small rules; `test/lint/boundaries.test.ts` proves they fire.
 */
import path from 'node:path';

/** The layer of each folder directly under src/. */
export const LAYER_OF = {
  core: 'core',
  ipam: 'capability',
  netdata: 'capability',
  vip: 'capability',
  dhcp: 'capability',
  dhcp6: 'capability',
  network: 'capability',
  election: 'capability',
  tftp: 'capability',
  status: 'capability',
  pivot: 'capability',
  sandbox: 'capability',
  lab: 'lab',
  config: 'config',
  kube: 'adapter',
  host: 'adapter',
  metrics: 'adapter',
  log: 'adapter',
  cmd: 'cmd',
};

/**
 * The capabilities' ranks: a capability may import capabilities of a lower
 * rank only. The primitives of the field (IPAM, election, TFTP) first; then
 * what is built on them (the VIP, DHCP, network data, the provisioning
 * network); then what shows them all (status), moves them between
 * clusters (pivot) and serves DHCPv6 on DHCP's durable leases (dhcp6, ADR
 * 0035); last, what parses the packets of DHCP, DHCPv6 and TFTP without
 * privileges (sandbox, ADR 0031 and 0040).
 */
export const CAPABILITY_RANK = {
  ipam: 1,
  election: 1,
  tftp: 1,
  vip: 2,
  dhcp: 2,
  netdata: 2,
  network: 2,
  status: 3,
  pivot: 3,
  dhcp6: 3,
  sandbox: 4,
};

/** Imports a layer's rules would allow but the design forbids: the importing folder, the imported file (under src/), and why. */
export const FORBIDDEN_IMPORTS = [
  {
    from: 'kube',
    target: /^dhcp\/ledger(-plan)?\.ts$/,
    why: "the DHCP lease ledger's policy stays in src/dhcp: the kube adapter implements its port (verbs and caches) and src/cmd wires the two",
  },
];

/** Which layers each layer may import (its own folder is always allowed). */
export const MAY_IMPORT = {
  core: ['core'],
  capability: ['core', 'capability'],
  config: ['core', 'capability'],
  adapter: ['core', 'capability'],
  lab: ['core', 'capability', 'config', 'adapter'],
  cmd: ['core', 'capability', 'config', 'adapter', 'lab', 'cmd'],
};

/**
 * Top folders whose own files (directly in the folder) are pure: they may
 * import only `layers`, and nothing from the folder's `impure` subfolders.
 * The lab's rig/ and world/ touch the machine and the cluster; src/lab's own
 * files (plan, holders, timeline, view) take data and return data.
 */
export const PURE_PARTS = {
  lab: { layers: ['core', 'capability', 'config'], impure: ['lab/rig', 'lab/world'] },
};

const WHY = {
  core: 'src/core holds pure primitives and depends on nothing else',
  capability: 'a capability decides; it declares the ports it needs (ports.ts) and adapters implement them',
  config: 'configuration is typed data built from core and capability types',
  adapter: 'adapters implement capability ports; they do not call each other (cmd wires them together)',
  lab: 'the lab is its own layer over core, capabilities, config and adapters; src/cmd/lab.ts injects what it needs from cmd',
  cmd: '',
};

/**
 * Packages (or path fragments) only some folders under src/ may import, and
 * why. An owner is a folder under src/ with everything below it (`lab/rig`:
 * the lab's rig, which runs the one-machine world's processes).
 */
export const OWNED_IMPORTS = [
  { match: /^@kubernetes\/client-node(\/|$)/, owners: ['kube'], what: 'the Kubernetes client' },
  { match: /^(node:)?(dgram|net|tls)$/, owners: ['host', 'lab/rig'], what: 'sockets' },
  { match: /^netlink$|(^|\/)native\/|\.node$|^bindings$/, owners: ['host'], what: 'netlink and the native addon' },
  { match: /^(node:)?child_process$/, owners: ['host', 'lab/rig'], what: 'child processes' },
  { match: /^pino(\/|$)/, owners: ['log', 'cmd'], what: 'pino (capabilities take a core Logger)' },
];

/** The file's folder under src/ ('lab/rig'), or undefined outside src/. @param {string} cwd @param {string} filename */
function srcDirOf(cwd, filename) {
  const rel = path.relative(path.resolve(cwd, 'src'), path.resolve(cwd, filename));
  if (rel.startsWith('..') || path.isAbsolute(rel)) return undefined;
  return path.dirname(rel).split(path.sep).join('/');
}

/** @param {string} cwd @param {string} filename */
function srcFolderOf(cwd, filename) {
  const [top] = (srcDirOf(cwd, filename) ?? '').split('/');
  return top && top in LAYER_OF ? top : undefined;
}

/** Whether folder `dir` (under src/) is `folder` or inside it. @param {string} dir @param {string} folder */
const within = (dir, folder) => dir === folder || dir.startsWith(`${folder}/`);

/** "ipam, election, tftp < vip, dhcp, netdata, network < status". */
function rankLine() {
  /** @type {string[][]} */
  const byRank = [];
  for (const [name, rank] of Object.entries(CAPABILITY_RANK)) (byRank[rank] ??= []).push(name);
  return byRank.filter(Boolean).map((names) => names.join(', ')).join(' < ');
}

/** @type {import('eslint').Rule.RuleModule} */
const layers = {
  meta: {
    type: 'problem',
    docs: { description: 'imports follow cmd → adapters → capabilities → core (DESIGN.md, Layout)' },
    schema: [],
  },
  create(context) {
    const from = srcFolderOf(context.cwd, context.filename);
    if (!from) return {};
    const fromLayer = /** @type {keyof typeof MAY_IMPORT} */ (LAYER_OF[/** @type {keyof typeof LAYER_OF} */ (from)]);
    const fromDir = /** @type {string} */ (srcDirOf(context.cwd, context.filename));
    const pure = fromDir === from ? PURE_PARTS[/** @type {keyof typeof PURE_PARTS} */ (from)] : undefined;
    /** @param {import('estree').Node} node @param {unknown} source */
    const check = (node, source) => {
      if (typeof source !== 'string') return;
      for (const owned of OWNED_IMPORTS) {
        if (owned.match.test(source) && !owned.owners.some((o) => within(fromDir, o))) {
          context.report({
            node,
            message: `src/${from} may not import '${source}': only ${owned.owners.map((o) => `src/${o}`).join(' and ')} may use ${owned.what}.`,
          });
          return;
        }
      }
      if (!source.startsWith('.')) return;
      const targetFile = path.resolve(path.dirname(path.resolve(context.cwd, context.filename)), source);
      const target = srcFolderOf(context.cwd, targetFile);
      if (!target) return;
      const targetLayer = LAYER_OF[/** @type {keyof typeof LAYER_OF} */ (target)];
      if (pure) {
        const targetDir = /** @type {string} */ (srcDirOf(context.cwd, targetFile));
        const impure = pure.impure.find((f) => within(targetDir, f));
        if (impure || (target !== from && !pure.layers.includes(targetLayer))) {
          context.report({
            node,
            message: `src/${from}'s own files are its pure parts and may not import src/${impure ?? `${target} (${targetLayer})`}: only ${pure.impure.map((f) => `src/${f}`).join(' and ')} touch the machine and the cluster.`,
          });
          return;
        }
      }
      if (target === from) return;
      if (!MAY_IMPORT[fromLayer].includes(targetLayer)) {
        context.report({
          node,
          message: `src/${from} (${fromLayer}) may not import src/${target} (${targetLayer}): ${WHY[fromLayer]}.`,
        });
        return;
      }
      const fromRank = CAPABILITY_RANK[/** @type {keyof typeof CAPABILITY_RANK} */ (from)];
      const targetRank = CAPABILITY_RANK[/** @type {keyof typeof CAPABILITY_RANK} */ (target)];
      if (fromRank !== undefined && targetRank !== undefined && targetRank >= fromRank) {
        context.report({
          node,
          message: `src/${from} (capability rank ${fromRank}) may not import src/${target} (rank ${targetRank}): a capability imports only capabilities of a lower rank (${rankLine()}), so no two capabilities import each other; move what both need down a rank, or let src/cmd wire them.`,
        });
        return;
      }
      const targetPath = path.relative(path.resolve(context.cwd, 'src'), targetFile.replace(/\.js$/, '.ts')).split(path.sep).join('/');
      for (const f of FORBIDDEN_IMPORTS) {
        if (f.from === from && f.target.test(targetPath)) context.report({ node, message: `src/${from} may not import src/${targetPath}: ${f.why}.` });
      }
    };
    return {
      ImportDeclaration: (node) => check(node, node.source.value),
      ExportNamedDeclaration: (node) => node.source && check(node, node.source.value),
      ExportAllDeclaration: (node) => check(node, node.source.value),
      ImportExpression: (node) => node.source.type === 'Literal' && check(node, node.source.value),
    };
  },
};

/** @type {import('eslint').Rule.RuleModule} */
const envOnlyInCmd = {
  meta: {
    type: 'problem',
    docs: { description: 'only src/cmd reads process.env and process.argv' },
    schema: [],
  },
  create(context) {
    const from = srcFolderOf(context.cwd, context.filename);
    if (!from || from === 'cmd') return {};
    return {
      MemberExpression(node) {
        if (
          node.object.type === 'Identifier' &&
          node.object.name === 'process' &&
          node.property.type === 'Identifier' &&
          (node.property.name === 'env' || node.property.name === 'argv')
        ) {
          context.report({
            node,
            message: `src/${from} may not read process.${node.property.name}: src/cmd reads the environment and passes typed configuration in.`,
          });
        }
      },
    };
  },
};

export default { rules: { layers, 'env-only-in-cmd': envOnlyInCmd } };
