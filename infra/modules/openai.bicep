// Azure OpenAI account with the model deployments the model layer calls (`chat`, `mini`, `embeddings` by default).
// Key auth is disabled; the app calls it with its identity (Cognitive Services OpenAI User, see roles.bicep).
// main.bicep skips this module when an existing endpoint is given.

param accountName string
param location string
param tags object

@description('Deployments, created one at a time (an account rejects concurrent deployment changes): [{ name, model: { name, version, sku, capacity } }].')
param deployments array

resource account 'Microsoft.CognitiveServices/accounts@2024-10-01' = {
  name: accountName
  location: location
  tags: tags
  kind: 'OpenAI'
  sku: {
    name: 'S0'
  }
  properties: {
    // A custom subdomain is required for Entra ID authentication.
    customSubDomainName: accountName
    disableLocalAuth: true
    publicNetworkAccess: 'Enabled'
  }
}

@batchSize(1)
resource modelDeployments 'Microsoft.CognitiveServices/accounts/deployments@2024-10-01' = [for deployment in deployments: {
  parent: account
  name: deployment.name
  sku: {
    name: deployment.model.sku
    capacity: deployment.model.capacity
  }
  properties: {
    model: {
      format: 'OpenAI'
      name: deployment.model.name
      version: deployment.model.version
    }
  }
}]

output accountName string = account.name
output id string = account.id
output endpoint string = account.properties.endpoint
