// @ts-check
/**
 * ESLint rules that enforce DESIGN.md's dependency direction:
 *   cmd → adapters (kube, host, metrics, log) → capabilities → core
 * plus the rule that each outside surface has exactly one owner folder.
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
  network: 'capability',
  election: 'capability',
  tftp: 'capability',
  status: 'capability',
  lab: 'capability',
  config: 'config',
  kube: 'adapter',
  host: 'adapter',
  metrics: 'adapter',
  log: 'adapter',
  cmd: 'cmd',
};

/** Which layers each layer may import (its own folder is always allowed). */
export const MAY_IMPORT = {
  core: ['core'],
  capability: ['core', 'capability'],
  config: ['core', 'capability'],
  adapter: ['core', 'capability'],
  cmd: ['core', 'capability', 'config', 'adapter', 'cmd'],
};

const WHY = {
  core: 'src/core holds pure primitives and depends on nothing else',
  capability: 'a capability decides; it declares the ports it needs (ports.ts) and adapters implement them',
  config: 'configuration is typed data built from core and capability types',
  adapter: 'adapters implement capability ports; they do not call each other (cmd wires them together)',
  cmd: '',
};

/** Packages (or path fragments) only one folder under src/ may import, and why. */
export const OWNED_IMPORTS = [
  { match: /^@kubernetes\/client-node(\/|$)/, owners: ['kube'], what: 'the Kubernetes client' },
  { match: /^(node:)?(dgram|net|tls)$/, owners: ['host'], what: 'sockets' },
  { match: /^netlink$|(^|\/)native\/|\.node$|^bindings$/, owners: ['host'], what: 'netlink and the native addon' },
  { match: /^(node:)?child_process$/, owners: ['host'], what: 'child processes' },
  { match: /^pino(\/|$)/, owners: ['log', 'cmd'], what: 'pino (capabilities take a core Logger)' },
];

/** @param {string} cwd @param {string} filename */
function srcFolderOf(cwd, filename) {
  const rel = path.relative(path.resolve(cwd, 'src'), path.resolve(cwd, filename));
  if (rel.startsWith('..') || path.isAbsolute(rel)) return undefined;
  const [top] = rel.split(path.sep);
  return top && top in LAYER_OF ? top : undefined;
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
    /** @param {import('estree').Node} node @param {unknown} source */
    const check = (node, source) => {
      if (typeof source !== 'string') return;
      for (const owned of OWNED_IMPORTS) {
        if (owned.match.test(source) && !owned.owners.includes(from)) {
          context.report({
            node,
            message: `src/${from} may not import '${source}': only ${owned.owners.map((o) => `src/${o}`).join(' and ')} may use ${owned.what}.`,
          });
          return;
        }
      }
      if (!source.startsWith('.')) return;
      const target = srcFolderOf(context.cwd, path.resolve(path.dirname(path.resolve(context.cwd, context.filename)), source));
      if (!target || target === from) return;
      const targetLayer = LAYER_OF[/** @type {keyof typeof LAYER_OF} */ (target)];
      if (!MAY_IMPORT[fromLayer].includes(targetLayer)) {
        context.report({
          node,
          message: `src/${from} (${fromLayer}) may not import src/${target} (${targetLayer}): ${WHY[fromLayer]}.`,
        });
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
