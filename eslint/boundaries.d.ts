import type { ESLint } from 'eslint';
declare const plugin: ESLint.Plugin;
export default plugin;
export declare const LAYER_OF: Record<string, 'core' | 'capability' | 'config' | 'adapter' | 'cmd'>;
export declare const MAY_IMPORT: Record<string, string[]>;
