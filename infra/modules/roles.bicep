// Every data-plane role a principal needs to run the service: the app's managed identity always, and optionally a
// developer who runs the service locally against the same resources. Nothing here grants management-plane access.

param principalId string

@allowed([
  'User'
  'ServicePrincipal'
  'Group'
])
param principalType string

param storageAccountName string
param cosmosAccountName string
param serviceBusNamespaceName string
param applicationInsightsName string

@description('Azure OpenAI account in this resource group.')
param openAiAccountName string

@description('False when the service uses an existing Azure OpenAI endpoint elsewhere (grant that role by hand).')
param assignOpenAiUser bool = true

// Built-in Azure RBAC role definition ids.
var roles = {
  storageBlobDataOwner: 'b7e6dc6d-f1e8-4753-8033-0f276bb0955b'
  storageQueueDataContributor: '974c5e8b-45b9-4653-ba55-5f855dd0fb88'
  storageTableDataContributor: '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3'
  serviceBusDataOwner: '090c5cfd-751d-490a-894a-3ce6f1109419'
  cognitiveServicesOpenAIUser: '5e0bd9bd-7b93-4f28-af87-19fc36ad61bd'
  monitoringMetricsPublisher: '3913510d-42f4-4e42-8a64-420c390055eb'
}

// Cosmos DB data-plane role (not Azure RBAC): Cosmos DB Built-in Data Contributor.
var cosmosDataContributorRoleId = '00000000-0000-0000-0000-000000000002'

// Host storage (AzureWebJobsStorage), Durable Functions (queues and tables), the deployment package and artifacts.
var storageRoles = [
  roles.storageBlobDataOwner
  roles.storageQueueDataContributor
  roles.storageTableDataContributor
]

// Data Owner for the queue trigger: it receives, and the scale controller reads the queue's length (runtime properties
// need the Manage claim, which Data Receiver lacks). The app never sends, so there is no Data Sender.
var serviceBusRoles = [
  roles.serviceBusDataOwner
]

resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' existing = {
  name: storageAccountName
}

resource cosmos 'Microsoft.DocumentDB/databaseAccounts@2025-10-15' existing = {
  name: cosmosAccountName
}

resource serviceBus 'Microsoft.ServiceBus/namespaces@2024-01-01' existing = {
  name: serviceBusNamespaceName
}

resource applicationInsights 'Microsoft.Insights/components@2020-02-02' existing = {
  name: applicationInsightsName
}

resource openAi 'Microsoft.CognitiveServices/accounts@2024-10-01' existing = if (assignOpenAiUser) {
  name: openAiAccountName
}

resource storageAssignments 'Microsoft.Authorization/roleAssignments@2022-04-01' = [for roleId in storageRoles: {
  name: guid(storage.id, principalId, roleId)
  scope: storage
  properties: {
    principalId: principalId
    principalType: principalType
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleId)
  }
}]

resource serviceBusAssignments 'Microsoft.Authorization/roleAssignments@2022-04-01' = [for roleId in serviceBusRoles: {
  name: guid(serviceBus.id, principalId, roleId)
  scope: serviceBus
  properties: {
    principalId: principalId
    principalType: principalType
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleId)
  }
}]

resource metricsPublisher 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(applicationInsights.id, principalId, roles.monitoringMetricsPublisher)
  scope: applicationInsights
  properties: {
    principalId: principalId
    principalType: principalType
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.monitoringMetricsPublisher)
  }
}

resource openAiUser 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (assignOpenAiUser) {
  name: guid(openAi.id, principalId, roles.cognitiveServicesOpenAIUser)
  scope: openAi
  properties: {
    principalId: principalId
    principalType: principalType
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.cognitiveServicesOpenAIUser)
  }
}

// Account scope: every database and container, including the change-feed `leases` container.
resource cosmosDataContributor 'Microsoft.DocumentDB/databaseAccounts/sqlRoleAssignments@2025-10-15' = {
  parent: cosmos
  name: guid(cosmos.id, principalId, cosmosDataContributorRoleId)
  properties: {
    principalId: principalId
    roleDefinitionId: '${cosmos.id}/sqlRoleDefinitions/${cosmosDataContributorRoleId}'
    scope: cosmos.id
  }
}
