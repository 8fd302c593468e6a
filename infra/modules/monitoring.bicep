// Log Analytics + workspace-based Application Insights. Local (key) ingestion is off: the app publishes telemetry with
// its identity (Monitoring Metrics Publisher, see roles.bicep, and APPLICATIONINSIGHTS_AUTHENTICATION_STRING).

param logAnalyticsName string
param applicationInsightsName string
param location string
param tags object

@minValue(30)
@maxValue(730)
param retentionInDays int = 30

resource logAnalytics 'Microsoft.OperationalInsights/workspaces@2023-09-01' = {
  name: logAnalyticsName
  location: location
  tags: tags
  properties: {
    sku: {
      name: 'PerGB2018'
    }
    retentionInDays: retentionInDays
  }
}

resource applicationInsights 'Microsoft.Insights/components@2020-02-02' = {
  name: applicationInsightsName
  location: location
  tags: tags
  kind: 'web'
  properties: {
    Application_Type: 'web'
    WorkspaceResourceId: logAnalytics.id
    DisableLocalAuth: true
  }
}

output applicationInsightsName string = applicationInsights.name
// Not a secret: it names the resource and ingestion endpoint; with local auth disabled it cannot be used to write
// without an Entra ID token.
output connectionString string = applicationInsights.properties.ConnectionString
output logAnalyticsWorkspaceId string = logAnalytics.id
