import type { ESLint } from 'eslint';
declare const plugin: ESLint.Plugin;
export default plugin;
export declare const LAYER_OF: Record<string, 'core' | 'capability' | 'config' | 'adapter' | 'cmd'>;
export declare const MAY_IMPORT: Record<string, string[]>;
export declare const CAPABILITY_RANK: Record<string, number>;
export declare const FORBIDDEN_IMPORTS: { from: string; target: RegExp; why: string }[];
