import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

// `npm run build` compiles shared/ to dist/shared (JS: .config/tsconfig.build.json; declarations for the client:
// .config/tsconfig.client.json), so each `./client*` export must name the dist twin of a source file that exists.
const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
  exports: Record<string, { types: string; import: string } | string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
  devDependencies: Record<string, string>;
};
const clientConfig = JSON.parse(readFileSync(new URL('../../../.config/tsconfig.client.json', import.meta.url), 'utf8')) as { compilerOptions: Record<string, unknown>; include: string[] };

describe('the package exports the client', () => {
  it('./client, ./client/ai-sdk and ./client/openai-agents point at the built JS and .d.ts of shared/client sources', () => {
    const entries = Object.entries(pkg.exports).filter(([name]) => name.startsWith('./client'));
    expect(entries.map(([name]) => name).sort()).toEqual(['./client', './client/ai-sdk', './client/openai-agents']);
    for (const [, target] of entries) {
      if (typeof target === 'string') throw new Error('a client export names its types and its JS');
      const source = target.import.replace(/^\.\/dist\//, '').replace(/\.js$/, '.ts');
      expect(source).toMatch(/^shared\/client\//);
      expect(existsSync(new URL(`../../../${source}`, import.meta.url)), source).toBe(true);
      expect(target.types).toBe(target.import.replace(/\.js$/, '.d.ts'));
    }
    expect(clientConfig.compilerOptions).toMatchObject({ declaration: true, outDir: '../dist', rootDir: '..' });
    expect(clientConfig.include).toEqual(['../shared/client']);
  });

  it('the agent SDKs the hooks type against are optional peers (and dev dependencies for the tests)', () => {
    for (const name of ['ai', '@openai/agents']) {
      expect(pkg.peerDependencies[name], name).toBeDefined();
      expect(pkg.peerDependenciesMeta[name]?.optional, name).toBe(true);
      expect(pkg.devDependencies[name], name).toBeDefined();
    }
  });
});
