// The Function App on Flex Consumption (Linux, Node 22) with a user-assigned managed identity, and every app setting
// the service, the Functions host and its extensions read. No setting holds a secret: each connection names an
// endpoint and the identity that reaches it.
//
// `appSettings` is the single list of app settings. test/integration/infra.test.ts compares its keys with the
// settings shared/platform/config.ts reads and with local.settings.example.json.

param name string
param planName string
param location string
param tags object

@description('Resource id and client id of the user-assigned identity the app runs as.')
param identityId string
param identityClientId string

param storageAccountName string
param deploymentContainerName string
@description('Blob container for large artifact contents (detail memory).')
param artifactsContainerName string
param applicationInsightsConnectionString string
param cosmosEndpoint string
param cosmosDatabaseName string
param serviceBusFullyQualifiedNamespace string
param serviceBusQueueName string
param durableTaskHubName string
param embeddingDimensions int
param modelProvider string
param kTurnBuffer int
param nActiveTurns int
param numRecentSessions int
param topKFacts int
param maxRequestBytes int
param authMode string
param entraTenantId string
param entraAudience string
param modelTimeoutMs int
param modelMaxRetries int
param insightCategories string
param sessionIdleTimeoutMinutes int
param idleCheckSchedule string
param minSessionsForAggregation int
param insightConfidenceThreshold string
param insightSimilarityThreshold string
param nightlySchedule string
param nightlyParallelism int
param retentionSupersededInsightDays int
param openAiEndpoint string
param openAiChatDeploymentName string
param openAiMiniDeploymentName string
param openAiEmbeddingDeploymentName string

param maximumInstanceCount int = 100
param instanceMemoryMB int = 2048

resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' existing = {
  name: storageAccountName
}

var appSettings = {
  // Functions host storage, by identity (blob, queue and table; also the Durable Functions task hub).
  // FUNCTIONS_WORKER_RUNTIME and FUNCTIONS_EXTENSION_VERSION are not set: Flex Consumption rejects them and takes the
  // runtime from functionAppConfig.runtime below.
  AzureWebJobsStorage__accountName: storageAccountName
  AzureWebJobsStorage__credential: 'managedidentity'
  AzureWebJobsStorage__clientId: identityClientId
  // host.json: extensions.durableTask.hubName = %DURABLE_TASK_HUB%
  DURABLE_TASK_HUB: durableTaskHubName
  APPLICATIONINSIGHTS_CONNECTION_STRING: applicationInsightsConnectionString
  // Entra ID ingestion (the Application Insights resource has local auth disabled).
  APPLICATIONINSIGHTS_AUTHENTICATION_STRING: 'ClientId=${identityClientId};Authorization=AAD'
  // DefaultAzureCredential in the service's own SDK clients selects the user-assigned identity by this client id.
  AZURE_CLIENT_ID: identityClientId
  // glibc's malloc, read as the Node worker starts: two arenas instead of eight per core. Every thread that allocates
  // (the service's, the parse thread's, V8's and libuv's helpers) otherwise keeps an arena of its own, whose freed
  // memory stays resident. Measured on the local host's hosted bench: 150-200 MB less at the peak under load; the
  // PGlite thread there (not in Azure) ran about 3% slower (README, Bounded memory).
  MALLOC_ARENA_MAX: '2'

  // Cosmos DB: connection `COSMOS` of the change-feed trigger, and the service's Cosmos client.
  STORAGE_BACKEND: 'cosmos'
  COSMOS__accountEndpoint: cosmosEndpoint
  COSMOS__credential: 'managedidentity'
  COSMOS__clientId: identityClientId
  COSMOS_DATABASE: cosmosDatabaseName

  // Service Bus: connection `SERVICEBUS` of the session-enabled queue trigger on %SERVICEBUS_QUEUE%.
  SERVICEBUS__fullyQualifiedNamespace: serviceBusFullyQualifiedNamespace
  SERVICEBUS__credential: 'managedidentity'
  SERVICEBUS__clientId: identityClientId
  SERVICEBUS_QUEUE: serviceBusQueueName

  // Service behaviour (shared/platform/config.ts).
  K_TURN_BUFFER: string(kTurnBuffer)
  N_ACTIVE_TURNS: string(nActiveTurns)
  NUM_RECENT_SESSIONS: string(numRecentSessions)
  TOP_K_FACTS: string(topKFacts)
  MAX_REQUEST_BYTES: string(maxRequestBytes)

  // Authentication (README, Authentication and authorization): Entra ID access tokens for the API's app registration
  // (ENTRA_JWKS_URL is derived from the tenant), and/or API keys kept as hashes in the apiKeys container.
  AUTH_MODE: authMode
  ENTRA_TENANT_ID: entraTenantId
  ENTRA_AUDIENCE: entraAudience
  ENTRA_USER_CLAIM: 'oid'
  ENTRA_ALL_USERS_ROLE: 'Memory.All'
  INSIGHT_CATEGORIES: insightCategories

  // Projection: the change feed queues sessions; the queue is served a slice at a time, round-robin (timer-projection-queue).
  PROJECTION_SLICE_EVENTS: '128'
  PROJECTION_BUDGET_MS: '60000'
  PROJECTION_QUEUE_SCHEDULE: '*/5 * * * * *'

  // Session end, reflection and nightly consolidation (durable orchestrations; timer schedules are NCRONTAB, UTC).
  SESSION_IDLE_TIMEOUT_MINUTES: string(sessionIdleTimeoutMinutes)
  IDLE_CHECK_SCHEDULE: idleCheckSchedule
  MIN_SESSIONS_FOR_AGGREGATION: string(minSessionsForAggregation)
  INSIGHT_CONFIDENCE_THRESHOLD: insightConfidenceThreshold
  INSIGHT_SIMILARITY_THRESHOLD: insightSimilarityThreshold
  NIGHTLY_SCHEDULE: nightlySchedule
  NIGHTLY_PARALLELISM: string(nightlyParallelism)
  // Retention (long-term reflection): Cosmos stamps superseded/merged insights with a per-item ttl of this period.
  RETENTION_SUPERSEDED_INSIGHT_DAYS: string(retentionSupersededInsightDays)
  // Forget: the tombstone's wait after a clean scan before the last purge round; at least host.json's functionTimeout.
  FORGET_GRACE_SECONDS: '600'

  // Detail memory: offload threshold and artifact limits; large contents in the artifacts blob container, by identity.
  OFFLOAD_THRESHOLD_TOKENS: '500'
  ARTIFACT_INLINE_MAX_BYTES: '65536'
  ARTIFACT_MAX_BYTES: '16777216'
  ARTIFACTS_BLOB_ENDPOINT: storage.properties.primaryEndpoints.blob
  ARTIFACTS_CONTAINER: artifactsContainerName

  // Models: Azure OpenAI by identity (AZURE_OPENAI_API_KEY is never set), or the offline models.
  MODEL_PROVIDER: modelProvider
  EMBEDDING_DIMENSIONS: string(embeddingDimensions)
  MODEL_TIMEOUT_MS: string(modelTimeoutMs)
  MODEL_MAX_RETRIES: string(modelMaxRetries)
  AZURE_OPENAI_ENDPOINT: openAiEndpoint
  AZURE_OPENAI_CHAT_DEPLOYMENT: openAiChatDeploymentName
  AZURE_OPENAI_MINI_DEPLOYMENT: openAiMiniDeploymentName
  AZURE_OPENAI_EMBEDDING_DEPLOYMENT: openAiEmbeddingDeploymentName
}

resource plan 'Microsoft.Web/serverfarms@2024-04-01' = {
  name: planName
  location: location
  tags: tags
  kind: 'functionapp'
  sku: {
    name: 'FC1'
    tier: 'FlexConsumption'
  }
  properties: {
    reserved: true
  }
}

resource app 'Microsoft.Web/sites@2024-04-01' = {
  name: name
  location: location
  // azd deploys the `api` service of azure.yaml to the resource with this tag.
  tags: union(tags, {
    'azd-service-name': 'api'
  })
  kind: 'functionapp,linux'
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: {
      '${identityId}': {}
    }
  }
  properties: {
    serverFarmId: plan.id
    httpsOnly: true
    siteConfig: {
      minTlsVersion: '1.2'
      ftpsState: 'Disabled'
    }
    functionAppConfig: {
      deployment: {
        storage: {
          type: 'blobContainer'
          value: '${storage.properties.primaryEndpoints.blob}${deploymentContainerName}'
          authentication: {
            type: 'UserAssignedIdentity'
            userAssignedIdentityResourceId: identityId
          }
        }
      }
      scaleAndConcurrency: {
        maximumInstanceCount: maximumInstanceCount
        instanceMemoryMB: instanceMemoryMB
      }
      runtime: {
        name: 'node'
        version: '22'
      }
    }
  }
}

resource settings 'Microsoft.Web/sites/config@2024-04-01' = {
  parent: app
  name: 'appsettings'
  properties: appSettings
}

// Publishing with basic (user/password) credentials is off: deployments use Entra ID.
resource scmBasicAuth 'Microsoft.Web/sites/basicPublishingCredentialsPolicies@2024-04-01' = {
  parent: app
  name: 'scm'
  properties: {
    allow: false
  }
}

resource ftpBasicAuth 'Microsoft.Web/sites/basicPublishingCredentialsPolicies@2024-04-01' = {
  parent: app
  name: 'ftp'
  properties: {
    allow: false
  }
}

output name string = app.name
output id string = app.id
output url string = 'https://${app.properties.defaultHostName}'
