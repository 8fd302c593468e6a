// Agent Memory Service: everything `azd up` (or `az deployment sub create`) provisions.
// One resource group per environment; every name derives from the environment name and a hash, never a literal.
// Connections are identity-only: the Function App's user-assigned identity holds every data-plane role and no
// setting carries a key or a connection string with a secret.
targetScope = 'subscription'

@minLength(1)
@maxLength(64)
@description('Name of the environment (azd: AZURE_ENV_NAME). Names the resource group and seeds every resource name.')
param environmentName string

@minLength(1)
@description('Region for every resource. Must offer Flex Consumption, Cosmos DB vector search and (unless an existing endpoint is used) the Azure OpenAI models below.')
@metadata({
  azd: {
    type: 'location'
  }
})
param location string

@description('Resource group name; empty derives rg-<environmentName>.')
param resourceGroupName string = ''

@description('Object id of a user (azd: AZURE_PRINCIPAL_ID) who gets the same data-plane roles as the app, to run the service locally against these resources. Empty grants nothing.')
param principalId string = ''

@allowed([
  'User'
  'ServicePrincipal'
  'Group'
])
@description('Kind of principal principalId is.')
param principalType string = 'User'

// ---- Service settings (app settings of the same names; see shared/platform/config.ts) ----

@minValue(8)
@maxValue(4096)
@description('EMBEDDING_DIMENSIONS: dimensions of every stored vector, requested from the embedding model. Fixed when the containers are created (changing it later needs new containers). 1536 is text-embedding-3-small\'s full size.')
param embeddingDimensions int = 1536

@allowed([
  'azure-openai'
  'local'
])
@description('MODEL_PROVIDER: `azure-openai` uses the Azure OpenAI deployments below by identity; `local` the offline models (then set embeddingDimensions to 512, the offline encoder\'s size).')
param modelProvider string = 'azure-openai'

@description('COSMOS_DATABASE: the Cosmos DB database that holds the memory containers.')
param cosmosDatabaseName string = 'agent_memory'

@description('SERVICEBUS_QUEUE: the session-enabled queue producers send append / end commands to.')
param serviceBusQueueName string = 'memory-commands'

@minLength(3)
@maxLength(45)
@description('DURABLE_TASK_HUB: the Durable Functions task hub (letters and digits, starting with a letter).')
param durableTaskHubName string = 'agentmemory'

@minValue(2)
@maxValue(200)
@description('K_TURN_BUFFER: turns per interaction window.')
param kTurnBuffer int = 10

@minValue(1)
@maxValue(200)
@description('N_ACTIVE_TURNS: turns always returned verbatim in the context.')
param nActiveTurns int = 5

@minValue(0)
@maxValue(20)
@description('NUM_RECENT_SESSIONS: session summaries in the session init block.')
param numRecentSessions int = 2

@description('TOP_K_FACTS: facts a search returns unless the request sets topK.')
param topKFacts int = 5

@minValue(1024)
@description('MAX_REQUEST_BYTES: largest accepted request body.')
param maxRequestBytes int = 1048576

@allowed(['entra', 'apikey', 'entra+apikey'])
@description('AUTH_MODE: Entra ID bearer tokens, API keys (npm run keys), or either. `open` is refused in Azure.')
param authMode string = 'entra'

@description('ENTRA_AUDIENCE: accepted token audiences, comma-separated (the API app registration\'s Application ID URI and/or client id). Required with entra modes.')
param entraAudience string

@description('ENTRA_TENANT_ID: the tenant whose tokens are accepted; this deployment\'s tenant unless said.')
param entraTenantId string = tenant().tenantId

@minValue(100)
@description('MODEL_TIMEOUT_MS: per-call timeout for hosted models.')
param modelTimeoutMs int = 30000

@minValue(0)
@maxValue(10)
@description('MODEL_MAX_RETRIES: retries of a hosted-model call on 429 / 5xx / timeout.')
param modelMaxRetries int = 4

@description('INSIGHT_CATEGORIES: insight categories for session reflection, comma-separated snake_case words.')
param insightCategories string = 'demographics,financial_goals,risk_profile,current_situation,concern,preference'

@minValue(1)
@maxValue(10080)
@description('SESSION_IDLE_TIMEOUT_MINUTES: a session without turns for this long is ended by the idle check.')
param sessionIdleTimeoutMinutes int = 30

@description('IDLE_CHECK_SCHEDULE: NCRONTAB schedule (UTC) of the idle-session check.')
param idleCheckSchedule string = '0 */5 * * * *'

@minValue(1)
@maxValue(100)
@description('MIN_SESSIONS_FOR_AGGREGATION: no-insight sessions reflected on together once this many piled up.')
param minSessionsForAggregation int = 3

@description('INSIGHT_CONFIDENCE_THRESHOLD: insights below this confidence (0..1) are dropped.')
param insightConfidenceThreshold string = '0.7'

@description('INSIGHT_SIMILARITY_THRESHOLD: cosine similarity (0..1) at which two insights of a category are merged.')
param insightSimilarityThreshold string = '0.92'

@description('NIGHTLY_SCHEDULE: NCRONTAB schedule (UTC) of the nightly consolidation.')
param nightlySchedule string = '0 0 3 * * *'

@minValue(1)
@maxValue(64)
@description('NIGHTLY_PARALLELISM: users reflected on at once by the nightly consolidation.')
param nightlyParallelism int = 4

@minValue(0)
@maxValue(3650)
@description('RETENTION_SUPERSEDED_INSIGHT_DAYS: days superseded or merged insights are kept for audit before retention deletes them; 0 keeps them for good.')
param retentionSupersededInsightDays int = 30

// ---- Sizing ----

@description('Cosmos DB serverless (pay per request). False provisions throughput per container instead.')
param cosmosServerless bool = true

@minValue(40)
@maxValue(1000)
@description('Flex Consumption: most instances the app scales out to.')
param maximumInstanceCount int = 100

@allowed([
  512
  2048
  4096
])
@description('Flex Consumption: memory per instance (MB).')
param instanceMemoryMB int = 2048

// ---- Azure OpenAI ----

@description('Use an existing Azure OpenAI endpoint (https://<name>.openai.azure.com/) instead of creating an account. Give the app identity "Cognitive Services OpenAI User" on it yourself (principal id: output AZURE_FUNCTION_IDENTITY_PRINCIPAL_ID).')
param existingOpenAiEndpoint string = ''

@description('Deployment names (AZURE_OPENAI_*_DEPLOYMENT). With an existing endpoint, the names of its deployments.')
param openAiChatDeploymentName string = 'chat'
param openAiMiniDeploymentName string = 'mini'
param openAiEmbeddingDeploymentName string = 'embeddings'

@description('Models for the deployments this template creates. Check regional availability before changing them.')
param openAiChatModel object = {
  name: 'gpt-4.1'
  version: '2025-04-14'
  sku: 'GlobalStandard'
  capacity: 50
}
param openAiMiniModel object = {
  name: 'gpt-4.1-mini'
  version: '2025-04-14'
  sku: 'GlobalStandard'
  capacity: 100
}
param openAiEmbeddingModel object = {
  name: 'text-embedding-3-small'
  version: '1'
  sku: 'GlobalStandard'
  capacity: 100
}

var resourceToken = toLower(uniqueString(subscription().id, environmentName, location))
var tags = {
  'azd-env-name': environmentName
}
var functionAppName = 'func-${resourceToken}'
var createOpenAi = empty(existingOpenAiEndpoint)
var openAiAccountName = 'oai-${resourceToken}'

resource rg 'Microsoft.Resources/resourceGroups@2024-03-01' = {
  name: !empty(resourceGroupName) ? resourceGroupName : 'rg-${environmentName}'
  location: location
  tags: tags
}

module identity 'modules/identity.bicep' = {
  name: 'identity'
  scope: rg
  params: {
    name: 'id-${resourceToken}'
    location: location
    tags: tags
  }
}

module monitoring 'modules/monitoring.bicep' = {
  name: 'monitoring'
  scope: rg
  params: {
    logAnalyticsName: 'log-${resourceToken}'
    applicationInsightsName: 'appi-${resourceToken}'
    location: location
    tags: tags
  }
}

module storage 'modules/storage.bicep' = {
  name: 'storage'
  scope: rg
  params: {
    name: 'st${resourceToken}'
    location: location
    tags: tags
    deploymentContainerName: 'app-package-${resourceToken}'
  }
}

module cosmos 'modules/cosmos.bicep' = {
  name: 'cosmos'
  scope: rg
  params: {
    accountName: 'cosmos-${resourceToken}'
    location: location
    tags: tags
    databaseName: cosmosDatabaseName
    embeddingDimensions: embeddingDimensions
    serverless: cosmosServerless
  }
}

module serviceBus 'modules/servicebus.bicep' = {
  name: 'servicebus'
  scope: rg
  params: {
    namespaceName: 'sb-${resourceToken}'
    location: location
    tags: tags
    queueName: serviceBusQueueName
  }
}

module openAi 'modules/openai.bicep' = if (createOpenAi) {
  name: 'openai'
  scope: rg
  params: {
    accountName: openAiAccountName
    location: location
    tags: tags
    deployments: [
      {
        name: openAiChatDeploymentName
        model: openAiChatModel
      }
      {
        name: openAiMiniDeploymentName
        model: openAiMiniModel
      }
      {
        name: openAiEmbeddingDeploymentName
        model: openAiEmbeddingModel
      }
    ]
  }
}

var openAiEndpoint = createOpenAi ? openAi!.outputs.endpoint : existingOpenAiEndpoint

module appRoles 'modules/roles.bicep' = {
  name: 'roles-app'
  scope: rg
  params: {
    principalId: identity.outputs.principalId
    principalType: 'ServicePrincipal'
    storageAccountName: storage.outputs.name
    cosmosAccountName: cosmos.outputs.accountName
    serviceBusNamespaceName: serviceBus.outputs.namespaceName
    applicationInsightsName: monitoring.outputs.applicationInsightsName
    openAiAccountName: openAiAccountName
    assignOpenAiUser: createOpenAi
  }
  // The OpenAI account is referenced by name (no output to wait for), so wait for it explicitly.
  dependsOn: [
    openAi
  ]
}

module developerRoles 'modules/roles.bicep' = if (!empty(principalId)) {
  name: 'roles-developer'
  scope: rg
  params: {
    principalId: principalId
    principalType: principalType
    storageAccountName: storage.outputs.name
    cosmosAccountName: cosmos.outputs.accountName
    serviceBusNamespaceName: serviceBus.outputs.namespaceName
    applicationInsightsName: monitoring.outputs.applicationInsightsName
    openAiAccountName: openAiAccountName
    assignOpenAiUser: createOpenAi
  }
  // The OpenAI account is referenced by name (no output to wait for), so wait for it explicitly.
  dependsOn: [
    openAi
  ]
}

module functionApp 'modules/functionapp.bicep' = {
  name: 'functionapp'
  scope: rg
  params: {
    name: functionAppName
    planName: 'plan-${resourceToken}'
    location: location
    tags: tags
    identityId: identity.outputs.id
    identityClientId: identity.outputs.clientId
    storageAccountName: storage.outputs.name
    deploymentContainerName: storage.outputs.deploymentContainerName
    artifactsContainerName: storage.outputs.artifactsContainerName
    applicationInsightsConnectionString: monitoring.outputs.connectionString
    cosmosEndpoint: cosmos.outputs.endpoint
    cosmosDatabaseName: cosmos.outputs.databaseName
    serviceBusFullyQualifiedNamespace: serviceBus.outputs.fullyQualifiedNamespace
    serviceBusQueueName: serviceBus.outputs.queueName
    durableTaskHubName: durableTaskHubName
    embeddingDimensions: embeddingDimensions
    modelProvider: modelProvider
    kTurnBuffer: kTurnBuffer
    nActiveTurns: nActiveTurns
    numRecentSessions: numRecentSessions
    topKFacts: topKFacts
    maxRequestBytes: maxRequestBytes
    authMode: authMode
    entraTenantId: entraTenantId
    entraAudience: entraAudience
    modelTimeoutMs: modelTimeoutMs
    modelMaxRetries: modelMaxRetries
    insightCategories: insightCategories
    sessionIdleTimeoutMinutes: sessionIdleTimeoutMinutes
    idleCheckSchedule: idleCheckSchedule
    minSessionsForAggregation: minSessionsForAggregation
    insightConfidenceThreshold: insightConfidenceThreshold
    insightSimilarityThreshold: insightSimilarityThreshold
    nightlySchedule: nightlySchedule
    nightlyParallelism: nightlyParallelism
    retentionSupersededInsightDays: retentionSupersededInsightDays
    openAiEndpoint: openAiEndpoint
    openAiChatDeploymentName: openAiChatDeploymentName
    openAiMiniDeploymentName: openAiMiniDeploymentName
    openAiEmbeddingDeploymentName: openAiEmbeddingDeploymentName
    maximumInstanceCount: maximumInstanceCount
    instanceMemoryMB: instanceMemoryMB
  }
  // The app's first start reads storage, Cosmos and Service Bus with its identity: grant first.
  dependsOn: [
    appRoles
  ]
}

// ---- Outputs: azd writes them to .azure/<env>/.env. Setting-shaped ones are named after the app setting they feed,
// so a local run against these resources can copy them into local.settings.json as they are.

output AZURE_LOCATION string = location
output AZURE_TENANT_ID string = tenant().tenantId
output AZURE_RESOURCE_GROUP string = rg.name
output AZURE_FUNCTION_APP_NAME string = functionApp.outputs.name
output AZURE_FUNCTION_APP_URL string = functionApp.outputs.url
output AZURE_FUNCTION_IDENTITY_PRINCIPAL_ID string = identity.outputs.principalId
output AZURE_FUNCTION_IDENTITY_CLIENT_ID string = identity.outputs.clientId
output AZURE_STORAGE_ACCOUNT_NAME string = storage.outputs.name
output AZURE_STORAGE_BLOB_ENDPOINT string = storage.outputs.blobEndpoint
output AZURE_STORAGE_ARTIFACTS_CONTAINER string = storage.outputs.artifactsContainerName

output STORAGE_BACKEND string = 'cosmos'
output COSMOS__accountEndpoint string = cosmos.outputs.endpoint
output COSMOS_DATABASE string = cosmos.outputs.databaseName
output EMBEDDING_DIMENSIONS int = embeddingDimensions
output MODEL_PROVIDER string = modelProvider
output SERVICEBUS__fullyQualifiedNamespace string = serviceBus.outputs.fullyQualifiedNamespace
output SERVICEBUS_QUEUE string = serviceBus.outputs.queueName
output DURABLE_TASK_HUB string = durableTaskHubName
output APPLICATIONINSIGHTS_CONNECTION_STRING string = monitoring.outputs.connectionString
output AZURE_OPENAI_ENDPOINT string = openAiEndpoint
output AZURE_OPENAI_CHAT_DEPLOYMENT string = openAiChatDeploymentName
output AZURE_OPENAI_MINI_DEPLOYMENT string = openAiMiniDeploymentName
output AZURE_OPENAI_EMBEDDING_DEPLOYMENT string = openAiEmbeddingDeploymentName
